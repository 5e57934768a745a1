//! Sorting more items than memory should hold: items are held until they
//! pass a budget of bytes, then sorted and written to a temporary file (a
//! run); the runs are merged as the sorted items are asked for. Below the
//! budget nothing is written. What `import` and `usage` list of a history
//! (its rollouts, its Claude sessions) goes through here, so their memory
//! does not grow with the history.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// How many bytes of items are held before a run is written: 1 MB keeps
/// the merge's files (one per run, each read through a small buffer) in
/// the hundreds up to hundreds of GB of history.
pub const BUDGET: usize = 1 << 20;

/// An order of items.
pub type Order<T> = fn(&T, &T) -> Ordering;

/// Items being sorted (see the module's documentation). Items that order
/// equal come out in the order they were pushed.
pub struct ExternalSort<T> {
    order: Order<T>,
    /// About how many bytes an item holds.
    size: fn(&T) -> usize,
    budget: usize,
    /// Where runs are written (the system's temporary folder when `None`).
    dir: Option<PathBuf>,
    items: Vec<T>,
    held: usize,
    runs: Vec<BufReader<File>>,
}

impl<T: Serialize + DeserializeOwned> ExternalSort<T> {
    /// Sorts by `order`, holding at most about `budget` bytes (as `size`
    /// counts them) and writing runs in `dir`.
    pub fn new(budget: usize, dir: Option<PathBuf>, order: Order<T>, size: fn(&T) -> usize) -> Self {
        Self {
            order,
            size,
            budget,
            dir,
            items: Vec::new(),
            held: 0,
            runs: Vec::new(),
        }
    }

    /// Adds an item.
    pub fn push(&mut self, item: T) -> anyhow::Result<()> {
        self.held += (self.size)(&item);
        self.items.push(item);
        if self.held > self.budget {
            self.write_run()?;
        }
        Ok(())
    }

    /// Sorts the items held into a run of their own.
    fn write_run(&mut self) -> anyhow::Result<()> {
        // Stable: equal items stay in push order within a run, and the
        // merge takes equal items from earlier runs first.
        self.items.sort_by(self.order);
        let mut out = BufWriter::with_capacity(64 * 1024, temporary(self.dir.as_deref())?);
        for item in self.items.drain(..) {
            write_record(&mut out, &item)?;
        }
        self.held = 0;
        self.runs.push(BufReader::with_capacity(8 * 1024, rewound(out)?));
        Ok(())
    }

    /// The items in order.
    pub fn sorted(mut self) -> anyhow::Result<Sorted<T>> {
        if self.runs.is_empty() {
            self.items.sort_by(self.order);
            return Ok(Sorted::Held(std::mem::take(&mut self.items).into_iter()));
        }
        if !self.items.is_empty() {
            self.write_run()?;
        }
        let mut merge = Merge {
            order: self.order,
            runs: std::mem::take(&mut self.runs),
            heap: BinaryHeap::new(),
            buffer: Vec::new(),
        };
        for run in 0..merge.runs.len() {
            merge.refill(run)?;
        }
        Ok(Sorted::Merged(merge))
    }
}

/// Sorted items: held, or merged from runs.
pub enum Sorted<T> {
    Held(std::vec::IntoIter<T>),
    Merged(Merge<T>),
}

impl<T: DeserializeOwned> Iterator for Sorted<T> {
    type Item = anyhow::Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Sorted::Held(items) => items.next().map(Ok),
            Sorted::Merged(merge) => merge.next().transpose(),
        }
    }
}

/// Sorted runs merged into one order.
pub struct Merge<T> {
    order: Order<T>,
    runs: Vec<BufReader<File>>,
    heap: BinaryHeap<Reverse<Next<T>>>,
    buffer: Vec<u8>,
}

impl<T: DeserializeOwned> Merge<T> {
    /// Reads run `run`'s next item into the heap.
    fn refill(&mut self, run: usize) -> anyhow::Result<()> {
        if let Some(input) = self.runs.get_mut(run) {
            if let Some(item) = read_record(input, &mut self.buffer)? {
                self.heap.push(Reverse(Next { item, run, order: self.order }));
            }
        }
        Ok(())
    }

    fn next(&mut self) -> anyhow::Result<Option<T>> {
        let Some(Reverse(Next { item, run, .. })) = self.heap.pop() else {
            return Ok(None);
        };
        self.refill(run)?;
        Ok(Some(item))
    }
}

/// An item next in its run.
struct Next<T> {
    item: T,
    run: usize,
    order: Order<T>,
}

impl<T> PartialEq for Next<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T> Eq for Next<T> {}

impl<T> PartialOrd for Next<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Next<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.order)(&self.item, &other.item).then(self.run.cmp(&other.run))
    }
}

/// A temporary file, gone when closed.
pub fn temporary(dir: Option<&Path>) -> anyhow::Result<File> {
    match dir {
        Some(dir) => tempfile::tempfile_in(dir).with_context(|| format!("cannot make a temporary file in {}", dir.display())),
        None => tempfile::tempfile().context("cannot make a temporary file"),
    }
}

/// The file `out` wrote, all written and read again from its start.
pub fn rewound(out: BufWriter<File>) -> anyhow::Result<File> {
    let mut file = out.into_inner().map_err(|error| error.into_error()).context("cannot write a sorting file")?;
    file.rewind().context("cannot read a sorting file")?;
    Ok(file)
}

/// Writes `value` with its length before it.
pub fn write_record<T: Serialize>(out: &mut BufWriter<File>, value: &T) -> anyhow::Result<()> {
    let bytes = postcard::to_stdvec(value).context("cannot encode an item to sort")?;
    let len = u32::try_from(bytes.len()).context("an item to sort is too long")?;
    out.write_all(&len.to_le_bytes()).context("cannot write a sorting file")?;
    out.write_all(&bytes).context("cannot write a sorting file")
}

/// Reads the next value [`write_record`] wrote; `None` at the end.
pub fn read_record<T: DeserializeOwned>(input: &mut BufReader<File>, buffer: &mut Vec<u8>) -> anyhow::Result<Option<T>> {
    let mut len = [0; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error).context("cannot read a sorting file"),
    }
    buffer.resize(u32::from_le_bytes(len) as usize, 0);
    input.read_exact(buffer).context("cannot read a sorting file")?;
    postcard::from_bytes(buffer).map(Some).context("a sorting file is damaged")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn by_key(a: &(u8, u32), b: &(u8, u32)) -> Ordering {
        a.0.cmp(&b.0)
    }

    fn sorted_within(items: &[(u8, u32)], budget: usize) -> Vec<(u8, u32)> {
        let mut sort = ExternalSort::new(budget, None, by_key, |_| 5);
        for item in items {
            sort.push(*item).unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(sort.runs.is_empty(), items.len() * 5 <= budget);
        sort.sorted().unwrap_or_else(|e| panic!("{e}")).collect::<anyhow::Result<Vec<_>>>().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn nothing_sorted_is_nothing() {
        assert_eq!(sorted_within(&[], 0), Vec::new());
    }

    proptest! {
        /// Held or written in runs of any size, a stable sort.
        #[test]
        fn the_order_is_a_stable_sorts(items in proptest::collection::vec((0u8..6, any::<u32>()), 0..64), budget in 0usize..400) {
            let mut expected = items.clone();
            expected.sort_by(by_key);
            prop_assert_eq!(sorted_within(&items, budget), expected);
        }
    }
}
