//! `bench compare --plot FILE.svg`: the rows as a grouped bar chart, one
//! group per (level, op), one bar per (store, exec), height the median
//! ops/s on a log scale (levels differ by orders of magnitude), with a
//! min-max bar over each. Drawn with plotters' SVG backend; text is left
//! to the viewer's fonts (no font files are read).

use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;

use super::Row;

/// Chart size, in SVG pixels.
const WIDTH_PX: u32 = 1200;
const HEIGHT_PX: u32 = 640;
const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Draw `rows` into `path` (an SVG file).
pub(crate) fn draw(path: &Path, rows: &[Row]) -> anyhow::Result<()> {
    let mut groups: Vec<String> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    for r in rows {
        let g = format!("{} {}", r.level, r.op);
        if !groups.contains(&g) {
            groups.push(g);
        }
        let s = label(r);
        if !series.contains(&s) {
            series.push(s);
        }
    }
    let positive = rows.iter().flat_map(|r| [r.min, r.max]).filter(|v| *v > 0.0);
    let lo = positive.clone().fold(f64::INFINITY, f64::min).min(1e6) / 2.0;
    let hi = positive.fold(1.0, f64::max) * 2.0;
    let root = SVGBackend::new(path, (WIDTH_PX, HEIGHT_PX)).into_drawing_area();
    let e = |e: DrawingAreaErrorKind<_>| anyhow::anyhow!("draw {}: {e:?}", path.display());
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "raftfs bench compare: ops/s, median of the runs (bars: min-max)",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..groups.len() as f64, (lo.max(1.0)..hi).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("ops/s")
        .draw()
        .map_err(e)?;
    let width = 0.8 / series.len().max(1) as f64;
    for (si, s) in series.iter().enumerate() {
        let color = COLORS[si % COLORS.len()];
        let bars: Vec<(f64, &Row)> = rows
            .iter()
            .filter(|r| label(r) == *s)
            .filter_map(|r| {
                let g = groups.iter().position(|g| *g == format!("{} {}", r.level, r.op))?;
                Some((g as f64 + 0.1 + width * si as f64, r))
            })
            .collect();
        chart
            .draw_series(bars.iter().map(|(x, r)| {
                Rectangle::new(
                    [(*x, lo.max(1.0)), (*x + width * 0.9, r.median.max(1.0))],
                    color.filled(),
                )
            }))
            .map_err(e)?
            .label(s.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        chart
            .draw_series(bars.iter().map(|(x, r)| {
                ErrorBar::new_vertical(
                    *x + width * 0.45,
                    r.min.max(1.0),
                    r.median.max(1.0),
                    r.max.max(1.0),
                    BLACK.stroke_width(1),
                    6,
                )
            }))
            .map_err(e)?;
    }
    // Group names under their groups.
    for (i, g) in groups.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, lo.max(1.0)));
        root.draw(&Text::new(
            g.clone(),
            (x - 6 * g.len() as i32 / 2, y + 12),
            ("sans-serif", 15),
        ))
        .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(e)?;
    root.present().map_err(e).context("write the plot")?;
    Ok(())
}

/// A bar's legend: store and exec mode, and the transport when not TLS.
fn label(r: &Row) -> String {
    match r.transport.as_str() {
        "insecure" => format!("{} {} insecure", r.store, r.exec),
        _ => format!("{} {}", r.store, r.exec),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Level;

    #[test]
    fn draws_an_svg_with_every_group_and_series() {
        let row = |level, store: &str, exec: &str, median: f64| Row {
            level,
            store: store.into(),
            exec: exec.into(),
            transport: "tls".into(),
            op: "create".into(),
            runs: vec![median * 0.9, median, median * 1.1],
            median,
            min: median * 0.9,
            max: median * 1.1,
            cpu_us_per_op: Some(10.0),
            cpu_leader_us_per_op: None,
            cpu_follower_us_per_op: None,
            writes_per_entry: Some(1.5),
            read_p99_ms: None,
        };
        let rows = vec![
            row(Level::Engine, "memory", "apply", 80_000.0),
            row(Level::Engine, "memory", "leader", 120_000.0),
            row(Level::Grpc, "rocksdb", "apply", 5_000.0),
            row(Level::Grpc, "rocksdb", "leader", 9_000.0),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.svg");
        draw(&path, &rows).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
        for text in ["engine create", "grpc create", "memory apply", "rocksdb leader"] {
            assert!(svg.contains(text), "the chart names {text:?}");
        }
        assert!(svg.matches("<rect").count() >= 4, "a bar per row");
    }
}
