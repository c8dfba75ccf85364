//! The benchmark's table (Markdown) and chart (SVG).

use std::fmt::Write as _;
use std::time::Duration;

use super::Row;

/// A duration for humans: `12.3 ms`, `1.24 s`, `85 µs`.
pub(crate) fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 0.001 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// The rows as a Markdown table.
pub(crate) fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| tree | workload | level | native (median) | rg (median) | native / rg | result |\n\
         |---|---|---|---:|---:|---:|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.2} | {} |",
            r.tree,
            r.workload,
            r.level.name(),
            human(r.native),
            human(r.rg),
            r.ratio(),
            r.note
        );
    }
    out
}

/// A horizontal bar chart of the native/rg ratios (log scale, 1.0 marked).
pub(crate) fn svg(rows: &[Row], title: &str) -> String {
    let bar_h = 18.0;
    let gap = 6.0;
    let left = 430.0;
    let width = 360.0;
    let top = 40.0;
    let height = top + rows.len() as f64 * (bar_h + gap) + 40.0;
    // log10 scale from 0.01 to 10.
    let x = |ratio: f64| left + (ratio.clamp(0.01, 10.0).log10() + 2.0) / 3.0 * width;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{height}" font-family="sans-serif" font-size="12">"##,
        left + width + 80.0
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="10" y="20" font-size="14" font-weight="bold">{}</text>"##,
        escape(title)
    );
    for tick in [0.01, 0.1, 0.5, 1.0, 2.0, 10.0] {
        let tx = x(tick);
        let stroke = if tick == 1.0 { "#333" } else { "#ddd" };
        let _ = writeln!(
            s,
            r##"<line x1="{tx:.1}" y1="{:.1}" x2="{tx:.1}" y2="{:.1}" stroke="{stroke}"/><text x="{tx:.1}" y="{:.1}" text-anchor="middle" fill="#555">{tick}</text>"##,
            top - 5.0,
            height - 30.0,
            height - 15.0
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + i as f64 * (bar_h + gap);
        let ratio = r.ratio();
        let color = if ratio <= 1.0 { "#2b8a3e" } else { "#c92a2a" };
        let (x0, x1) = (x(1.0).min(x(ratio)), x(1.0).max(x(ratio)));
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{bar_h}" fill="{color}"/><text x="{:.1}" y="{:.1}">{ratio:.2}</text>"##,
            left - 8.0,
            y + 13.0,
            escape(&format!("{} · {} · {}", r.tree, r.workload, r.level.name())),
            (x1 - x0).max(1.0),
            left + width + 8.0,
            y + 13.0
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="{:.1}" fill="#555">native / rg, median wall time (log scale; left of 1 = native faster)</text>"##,
        height - 2.0
    );
    s.push_str("</svg>\n");
    s
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_units() {
        assert_eq!(human(Duration::from_micros(85)), "85 µs");
        assert_eq!(human(Duration::from_micros(12_340)), "12.3 ms");
        assert_eq!(human(Duration::from_millis(1_240)), "1.24 s");
    }
}
