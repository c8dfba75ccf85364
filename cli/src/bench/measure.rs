//! Timing and memory measurement: alternating runs, medians, peak RSS.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The median of `samples` (the mean of the two middle ones when even).
pub(crate) fn median(samples: &[Duration]) -> Duration {
    let mut v = samples.to_vec();
    v.sort();
    let n = v.len();
    if n == 0 {
        return Duration::ZERO;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

/// Run `a` and `b` alternately `iterations` times each (after one warm-up
/// run of each) and return their samples. Alternating spreads the machine's
/// noise over both sides instead of biasing one.
pub(crate) fn alternate(
    iterations: usize,
    mut a: impl FnMut(),
    mut b: impl FnMut(),
    mut tick: impl FnMut(),
) -> (Vec<Duration>, Vec<Duration>) {
    a();
    b();
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for i in 0..iterations {
        // Swap who goes first each round: the second run of a round sees a
        // warmer page cache and CPU.
        if i % 2 == 0 {
            ta.push(time(&mut a));
            tb.push(time(&mut b));
        } else {
            tb.push(time(&mut b));
            ta.push(time(&mut a));
        }
        tick();
    }
    (ta, tb)
}

fn time(f: &mut impl FnMut()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// Peak resident memory (VmHWM) of a command and of all its descendants,
/// in bytes, sampled from `/proc` every millisecond while it runs. The
/// kernel's high-water mark only grows, so the last sample of each process is
/// its peak up to that moment; a process living less than a millisecond may
/// be missed (it is then too small to matter here).
pub(crate) fn peak_rss(cmd: &mut Command) -> std::io::Result<(u64, u64)> {
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    let root = child.id();
    let mut own = 0u64;
    let mut descendants = std::collections::HashMap::<u32, u64>::new();
    loop {
        if let Some(kb) = vm_hwm_kb(root) {
            own = own.max(kb);
        }
        for pid in children_of(root) {
            if let Some(kb) = vm_hwm_kb(pid) {
                let e = descendants.entry(pid).or_default();
                *e = (*e).max(kb);
            }
        }
        if child.try_wait()?.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let kids = descendants.values().copied().max().unwrap_or(0);
    Ok((own * 1024, kids * 1024))
}

fn vm_hwm_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn children_of(pid: u32) -> Vec<u32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    std::fs::read_to_string(Path::new(&path))
        .map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_empty() {
        let ms = Duration::from_millis;
        assert_eq!(median(&[ms(3), ms(1), ms(2)]), ms(2));
        assert_eq!(
            median(&[ms(4), ms(1), ms(2), ms(3)]),
            Duration::from_micros(2500)
        );
        assert_eq!(median(&[]), Duration::ZERO);
    }
}
