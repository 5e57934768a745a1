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
    // Every item is done and the first error in the items' order is the one
    // reported, whichever thread met it first.
    map_each(items, work).into_iter().collect()
}

/// `work` applied to every item on the pool, one task each, every result
/// kept in the items' order.
fn map_each<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> anyhow::Result<R> + Sync + Send) -> Vec<anyhow::Result<R>> {
    use rayon::prelude::*;
    items.par_iter().with_max_len(1).map(work).collect()
}

/// [`map`] for work as small as a system call (a stat per item): the items
/// split in a few long runs, not one task each, whose scheduling would cost
/// as much as the work.
pub fn map_small<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    items.par_iter().with_min_len(256).map(work).collect()
}

/// `work` applied to `items` a chunk of `chunk` at a time (each chunk on
/// every core, as [`map`] does), with the three parts overlapped: only a
/// few chunks are held, and while the pool does `work` on one chunk, this
/// thread takes the next chunk's items (which may read, as a catalog's
/// rows are) and hands the chunk before to `consume`, in the items' order.
/// Taking items or consuming results on this thread between the pool's
/// chunks left the pool idle for as long. The first error, of an item or
/// of the work, is the last result consumed, after every result before it
/// (those of its own chunk too: a report ends with the error after every
/// session before it, none dropped); the first error of `consume` ends it
/// and is returned.
pub fn map_streamed<T: Send + Sync, R: Send, E>(
    mut items: impl Iterator<Item = anyhow::Result<T>>,
    chunk: usize,
    work: impl Fn(&T) -> anyhow::Result<R> + Sync,
    mut consume: impl FnMut(anyhow::Result<R>) -> Result<(), E>,
) -> Result<(), E> {
    let work = &work;
    rayon::in_place_scope(|scope| {
        let mut running: Option<std::sync::mpsc::Receiver<Vec<anyhow::Result<R>>>> = None;
        // An item that fails is the last taken: the items before it are
        // worked and consumed, then its error.
        let mut failed = None;
        loop {
            let mut taken = Vec::with_capacity(chunk.max(1));
            while failed.is_none() && taken.len() < chunk.max(1) {
                match items.next() {
                    Some(Ok(item)) => taken.push(item),
                    Some(Err(error)) => failed = Some(error),
                    None => break,
                }
            }
            let next = (!taken.is_empty()).then(|| {
                let (done, receive) = std::sync::mpsc::sync_channel(1);
                scope.spawn(move |_| {
                    // The receiver is gone only when consuming failed.
                    let _ = done.send(map_each(&taken, work));
                });
                receive
            });
            let last = next.is_none();
            if let Some(before) = std::mem::replace(&mut running, next) {
                let Ok(done) = before.recv() else {
                    return consume(Err(anyhow::anyhow!("a worker ended without its results (it panicked)")));
                };
                for result in done {
                    if result.is_err() {
                        return consume(result);
                    }
                    consume(result)?;
                }
            }
            if last {
                return match failed {
                    Some(error) => consume(Err(error)),
                    None => Ok(()),
                };
            }
        }
    })
}

/// `first` and `second` on the pool at once, both waited for: a step of
/// this thread's (writing what the last batch made) overlapped with the
/// pool's next batch, where the pool would wait for it. From outside the
/// pool both run on it: a worker takes `second` while the other starts
/// `first`, and helps with `first` once done.
pub fn join<A: Send, B: Send>(first: impl FnOnce() -> A + Send, second: impl FnOnce() -> B + Send) -> (A, B) {
    rayon::join(first, second)
}

/// `work` started on the pool and not waited for: for a warm-up whose
/// result only a later call reads (through its own lazy cell), or a large
/// value freed (a process may end before it is), done on a spare core
/// while this one goes on.
pub fn beside(work: impl FnOnce() + Send + 'static) {
    rayon::spawn(work);
}

#[cfg(test)]
mod tests {
    use super::{map, map_streamed};

    /// The streamed map consumes the results in the items' order, whatever
    /// the chunk; an item that fails, or whose work fails, ends it with its
    /// error after every result before it.
    #[test]
    fn the_streamed_map_consumes_results_in_order_and_ends_at_the_first_error() {
        let items = || (0..10u64).map(|item| if item == 7 { Err(anyhow::anyhow!("item 7")) } else { Ok(item) });
        for chunk in [1usize, 3, 4, 100] {
            let yielded: Vec<Result<u64, String>> = (0..7).map(|item| Ok(item * 2)).chain([Err("item 7".to_owned())]).collect();
            let mut consumed = Vec::new();
            let ended: Result<(), ()> = map_streamed(items(), chunk, |item| Ok(item * 2), |result| {
                consumed.push(result.map_err(|error| error.to_string()));
                Ok(())
            });
            assert_eq!((ended, &consumed), (Ok(()), &yielded), "chunks of {chunk}");
        }
        let work_fails: Vec<Result<u64, String>> = {
            let mut consumed = Vec::new();
            let _: Result<(), ()> = map_streamed((0..10u64).map(Ok), 4, |item| if *item == 5 { anyhow::bail!("work 5") } else { Ok(*item) }, |result| {
                consumed.push(result.map_err(|error| error.to_string()));
                Ok(())
            });
            consumed
        };
        assert_eq!(work_fails, vec![Ok(0), Ok(1), Ok(2), Ok(3), Ok(4), Err("work 5".to_owned())]);
        let mut seen = 0;
        let stopped = map_streamed((0..100u64).map(Ok), 8, |item| Ok(*item), |result| {
            seen += 1;
            if result.is_ok_and(|item| item == 20) { Err("stop") } else { Ok(()) }
        });
        assert_eq!((stopped, seen), (Err("stop"), 21));
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
