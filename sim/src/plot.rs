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
