//! Latency samples reported as nearest-rank percentiles, for the benches' own reports. Each
//! bench is a crate of its own, so they include this file with `#[path]`.

use std::time::Duration;

/// Latency samples, in any order.
pub struct Percentiles(pub Vec<Duration>);

impl Percentiles {
    /// `<label>: n=<count> p50 <ms> ms, …, max <ms> ms`, one entry per rank in `per_mille`
    /// (500 is p50, 999 is p99.9); `<label>: n=0` when there is no sample.
    pub fn line(mut self, label: &str, per_mille: &[usize]) -> String {
        if self.0.is_empty() {
            return format!("{label}: n=0");
        }
        self.0.sort_unstable();
        let count = self.0.len();
        let rank = |per_mille: usize| self.0[(count * per_mille).div_ceil(1000).max(1) - 1];
        let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
        let mut parts: Vec<String> = per_mille
            .iter()
            .map(|&at| {
                let name = if at % 10 == 0 {
                    format!("p{}", at / 10)
                } else {
                    format!("p{}.{}", at / 10, at % 10)
                };
                format!("{name} {:.3} ms", ms(rank(at)))
            })
            .collect();
        parts.push(format!("max {:.3} ms", ms(self.0[count - 1])));
        format!("{label}: n={count} {}", parts.join(", "))
    }
}
