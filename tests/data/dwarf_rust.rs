// Fixture for the DWARF and demangling tests: Rust generics, traits, closures and inlining,
// built with -C opt-level=2 -g in both the legacy and the v0 mangling.
use std::hint::black_box;

pub trait Shape {
    fn area(&self) -> f64;
}

pub struct Square<T> {
    pub side: T,
}

impl Shape for Square<f64> {
    #[inline(never)]
    fn area(&self) -> f64 {
        self.side * self.side
    }
}

pub mod geometry {
    #[inline(always)]
    pub fn scale(x: u64, k: u64) -> u64 {
        x.wrapping_mul(k).rotate_left(7)
    }

    #[inline(never)]
    pub fn total<T: Copy + Into<u64>>(items: &[T]) -> u64 {
        items.iter().map(|&v| scale(v.into(), 31)).fold(0, |a, b| a ^ b)
    }
}

#[inline(never)]
fn dyn_area(s: &dyn Shape) -> f64 {
    s.area()
}

fn main() {
    let v: Vec<u32> = (0..black_box(100u32)).collect();
    let sq = Square { side: black_box(2.5f64) };
    println!("{} {}", geometry::total(&v), dyn_area(&sq));
}
