//! Lag over time as PNG (plotters, bitmap backend; text drawn with a TrueType font loaded from
//! disk, DejaVu Sans by default).

use crate::outcome::Sample;
use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::path::Path;

/// Where Debian's `fonts-dejavu-core` puts DejaVu Sans.
pub const DEFAULT_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Registers `font` as the sans-serif face of every plot.
pub fn use_font(font: &Path) -> Result<()> {
    let bytes = std::fs::read(font)
        .with_context(|| format!("read the font {} (give another TrueType font with --font)", font.display()))?;
    register_font("sans-serif", FontStyle::Normal, Box::leak(bytes.into_boxed_slice()))
        .map_err(|_| anyhow!("{} is not a TrueType font", font.display()))
}

/// One line of a plot.
pub struct Series<'a> {
    /// Legend.
    pub label: String,
    /// Samples.
    pub samples: &'a [Sample],
}

/// Plots lag (millions of records) over time (minutes) for each series into `path`.
pub fn lag(path: &Path, title: &str, series: &[Series<'_>]) -> Result<()> {
    let root = BitMapBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let t_max = series.iter().flat_map(|s| s.samples.iter().map(|x| x.t)).fold(1.0, f64::max) / 60.0;
    let lag_max = series.iter().flat_map(|s| s.samples.iter().map(|x| x.lag)).fold(1.0, f64::max) / 1e6 * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..t_max, 0.0..lag_max)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("minutes")
        .y_desc("lag, millions of records")
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    let colours = [RED, BLUE, GREEN, MAGENTA, BLACK, CYAN, RGBColor(230, 140, 0), RGBColor(120, 80, 40)];
    for (i, s) in series.iter().enumerate() {
        let colour = colours[i % colours.len()];
        chart
            .draw_series(LineSeries::new(s.samples.iter().map(|x| (x.t / 60.0, x.lag / 1e6)), colour.stroke_width(2)))
            .map_err(|e| anyhow!("{e}"))?
            .label(s.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
    }
    legend_and_write(&mut chart, &root, path)
}

/// One line of an x-y plot.
pub struct XySeries {
    /// Legend.
    pub label: String,
    /// Points (x, y).
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (every other segment left out).
    pub dashed: bool,
}

/// Plots each series' points on a logarithmic x axis into `path`, with a dotted horizontal
/// line at each of `marks` (value, label).
pub fn xy_log_x(
    path: &Path,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    series: &[XySeries],
    marks: &[(f64, &str)],
) -> Result<()> {
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x_min, x_max) = (xs().fold(f64::INFINITY, f64::min), xs().fold(1.0, f64::max));
    let y_max =
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).chain(marks.iter().map(|m| m.0)).fold(1.0, f64::max)
            * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d((x_min.min(x_max / 10.0)..x_max * 1.2).log_scale(), 0.0..y_max)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{:.0e}", x))
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    let colours = [RED, BLUE, GREEN, MAGENTA, BLACK, CYAN];
    for (i, s) in series.iter().enumerate() {
        let colour = colours[(i / 2) % colours.len()];
        let style = colour.stroke_width(if s.dashed { 1 } else { 2 });
        let points = s.points.clone();
        let segments: Vec<Vec<(f64, f64)>> = if s.dashed { dashes(&points, 12) } else { vec![points] };
        for (k, seg) in segments.into_iter().enumerate() {
            let drawn = chart.draw_series(LineSeries::new(seg, style)).map_err(|e| anyhow!("{e}"))?;
            if k == 0 {
                drawn.label(s.label.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            }
        }
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, colour.filled()))).map_err(|e| anyhow!("{e}"))?;
    }
    for &(y, label) in marks {
        let grey = RGBColor(120, 120, 120);
        chart
            .draw_series(
                dashes(&[(x_min.min(x_max / 10.0), y), (x_max * 1.2, y)], 80)
                    .into_iter()
                    .map(|seg| PathElement::new(seg, grey)),
            )
            .map_err(|e| anyhow!("{e}"))?;
        chart
            .draw_series([Text::new(
                label.to_string(),
                (x_min.min(x_max / 10.0) * 1.05, y * 1.02 + y_max * 0.01),
                ("sans-serif", 13),
            )])
            .map_err(|e| anyhow!("{e}"))?;
    }
    legend_and_write(&mut chart, &root, path)
}

/// A line cut into `pieces` pieces per segment, every other one kept, evenly in log x.
fn dashes(points: &[(f64, f64)], pieces: usize) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    for w in points.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        for k in (0..pieces).step_by(2) {
            let at = |f: f64| (x0 * (x1 / x0).powf(f), y0 + (y1 - y0) * f);
            out.push(vec![at(k as f64 / pieces as f64), at((k + 1) as f64 / pieces as f64)]);
        }
    }
    out
}

/// Draws the chart's legend in its upper left corner and writes the image to `path`.
fn legend_and_write<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, BitMapBackend<'a>, Cartesian2d<X, Y>>,
    root: &DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>,
    path: &Path,
) -> Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().with_context(|| format!("write {}", path.display()))?;
    Ok(())
}
