// Known chain main -> rust_outer -> rust_middle -> rust_hot, burning argv[1] seconds.
// Symbols are Rust-mangled (legacy _ZN..17h<hash>E); the test asserts on the stable names.
use std::hint::black_box;
use std::time::{Duration, Instant};

#[inline(never)]
fn rust_hot(n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        acc = black_box(acc.wrapping_add(i.wrapping_mul(2654435761)));
    }
    acc
}

#[inline(never)]
fn rust_middle(n: u64) -> u64 {
    black_box(rust_hot(n)) ^ 1
}

#[inline(never)]
fn rust_outer(n: u64) -> u64 {
    black_box(rust_middle(n)) ^ 2
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .filter(|s: &f64| *s > 0.0 && *s <= 60.0)
        .unwrap_or(2.0);
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut total = 0u64;
    while Instant::now() < end {
        total ^= rust_outer(200_000);
    }
    black_box(total);
}
