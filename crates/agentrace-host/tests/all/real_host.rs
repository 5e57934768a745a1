//! Real host tests: see below.
