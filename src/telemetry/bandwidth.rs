//! Measured memory read bandwidth, the ceiling of the decode roofline: a
//! decode step streams every weight once, so tokens/s × weight bytes can
//! never beat how fast the machine reads memory.
//!
//! A STREAM-style read test: every thread sums its own slice of a buffer far
//! larger than any cache, over and over, for about a second; bandwidth is
//! all bytes read over the wall time.

use std::time::{Duration, Instant};

/// Buffer size: well past the last-level cache of desktop and server CPUs.
const BUFFER_BYTES: usize = 512 << 20;

/// Sum a slice with four independent accumulators, so the loop is limited
/// by memory rather than by one add chain.
fn sum(chunk: &[u64]) -> u64 {
    let mut acc = [0u64; 4];
    let mut it = chunk.chunks_exact(4);
    for c in &mut it {
        acc[0] = acc[0].wrapping_add(c[0]);
        acc[1] = acc[1].wrapping_add(c[1]);
        acc[2] = acc[2].wrapping_add(c[2]);
        acc[3] = acc[3].wrapping_add(c[3]);
    }
    let tail: u64 = it.remainder().iter().fold(0, |a, b| a.wrapping_add(*b));
    acc.iter().fold(tail, |a, b| a.wrapping_add(*b))
}

/// Read bandwidth in bytes per second with `threads` threads over about
/// `duration` (plus one pass to touch every page first).
pub fn measure(threads: usize, duration: Duration) -> u64 {
    let threads = threads.max(1);
    let words = BUFFER_BYTES / 8;
    // Distinct values, written once: every page is really backed.
    let buf: Vec<u64> = (0..words as u64).collect();
    let per = words / threads;
    let start = Instant::now();
    let deadline = start + duration;
    let bytes: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let chunk = &buf[i * per..(i + 1) * per];
                s.spawn(move || {
                    let mut read = 0u64;
                    let mut check = 0u64;
                    while Instant::now() < deadline {
                        check = check.wrapping_add(sum(std::hint::black_box(chunk)));
                        read += (chunk.len() * 8) as u64;
                    }
                    std::hint::black_box(check);
                    read
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    });
    let secs = start.elapsed().as_secs_f64();
    (bytes as f64 / secs) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_matches_a_plain_fold() {
        let v: Vec<u64> = (0..1003).map(|x| x * 7919).collect();
        assert_eq!(sum(&v), v.iter().fold(0u64, |a, b| a.wrapping_add(*b)));
    }
}
