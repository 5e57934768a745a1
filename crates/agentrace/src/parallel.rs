//! Work spread over the machine's cores: a map over independent items
//! (sessions) whose results come back in the items' order, so the output is
//! the same whatever the number of cores. Owns no I/O of its own.

/// `work` applied to every item, on up to as many threads as cores; the
/// results in the items' order, or the error of the first item that failed.
///
/// The threads are rayon's pool, made once and kept for the process: an
/// import calls this for every batch, and threads made and ended per batch
/// each left their allocator heap behind, so the peak memory grew with the
/// number of batches, that is with the history.
pub fn map<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&T) -> anyhow::Result<R> + Sync + Send,
) -> anyhow::Result<Vec<R>> {
    use rayon::prelude::*;
    // Every item is done and the first error in the items' order is the one
    // reported, whichever thread met it first.
    let done: Vec<anyhow::Result<R>> = items.par_iter().with_max_len(1).map(work).collect();
    done.into_iter().collect()
}

/// `work` applied to `items` a chunk of `chunk` at a time (each chunk on
/// every core, as [`map`] does), as the results are asked for, so only a
/// chunk is held; the first error, of an item or of the work, ends them.
pub fn map_chunks<'a, T: Sync + 'a, R: Send + 'a>(
    mut items: impl Iterator<Item = anyhow::Result<T>> + 'a,
    chunk: usize,
    work: impl Fn(&T) -> anyhow::Result<R> + Sync + 'a,
) -> impl Iterator<Item = anyhow::Result<R>> + 'a {
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed {
            return None;
        }
        let taken = items.by_ref().take(chunk.max(1)).collect::<anyhow::Result<Vec<T>>>();
        match taken.and_then(|taken| map(&taken, &work)) {
            Ok(done) if done.is_empty() => None,
            Ok(done) => Some(done.into_iter().map(Ok).collect::<Vec<_>>()),
            Err(error) => {
                failed = true;
                Some(vec![Err(error)])
            }
        }
    })
    .flatten()
}

/// `work` started on the pool and not waited for: for a warm-up whose
/// result only a later call reads (through its own lazy cell), done on a
/// spare core while this one goes on.
pub fn beside(work: impl FnOnce() + Send + 'static) {
    rayon::spawn(work);
}

#[cfg(test)]
mod tests {
    use super::{map, map_chunks};

    #[test]
    fn chunks_come_back_in_order_and_the_first_error_ends_them() {
        let items = (0..10u64).map(|item| if item == 7 { Err(anyhow::anyhow!("item 7")) } else { Ok(item) });
        let done: Vec<Result<u64, String>> = map_chunks(items, 3, |item| Ok(item * 2)).map(|result| result.map_err(|error| error.to_string())).collect();
        assert_eq!(done, vec![Ok(0), Ok(2), Ok(4), Ok(6), Ok(8), Ok(10), Err("item 7".to_owned())]);
    }

    #[test]
    fn results_come_back_in_the_order_of_the_items() {
        let items: Vec<u64> = (0..1000).collect();
        let squares = map(&items, |item| Ok(item * item)).unwrap_or_default();
        assert_eq!(squares, items.iter().map(|item| item * item).collect::<Vec<_>>());
    }

    #[test]
    fn the_first_failing_item_gives_the_error() {
        let items: Vec<u64> = (0..100).collect();
        let failed = map(&items, |item| {
            if *item % 10 == 7 {
                anyhow::bail!("item {item}")
            }
            Ok(*item)
        });
        assert_eq!(failed.map_err(|error| error.to_string()), Err("item 7".to_owned()));
    }
}
