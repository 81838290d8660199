//! The whole bill as a plot (`bench cost --plot`): dollars a month against rows/s, both on log
//! scales, for Sluice in each mode and for Druid's cluster, as `docs/cost.svg` shows it. Text
//! is laid out with DejaVu Sans (Debian's `fonts-dejavu-core`, which `tests/browser/install.sh`
//! installs), so the same reports give the same document.

use super::cost::{CostArgs, RATES};
use super::cost_bill::{Inputs, Load, Mode};
use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

/// The font the plot's text is measured and named with.
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// The plot's size in pixels.
const SIZE: (u32, u32) = (760, 440);

/// Writes the plot where `--plot` says, if it does.
pub fn run(args: &CostArgs) -> Result<()> {
    if let Some(path) = &args.plot {
        let drawn = svg(&Inputs::read(args)?, &Load::of(args))?;
        std::fs::write(path, drawn).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

/// Registers [`FONT`] as the plot's sans-serif face.
fn use_font() -> Result<()> {
    let bytes =
        std::fs::read(FONT).with_context(|| format!("read the plot's font {FONT} (Debian: fonts-dejavu-core)"))?;
    register_font("sans-serif", FontStyle::Normal, Box::leak(bytes.into_boxed_slice()))
        .map_err(|_| anyhow!("{FONT} is not a TrueType font"))
}

/// The whole bill's lines as an SVG document.
pub fn svg(inputs: &Inputs, load: &Load) -> Result<String> {
    use_font()?;
    let at = |f: &dyn Fn(f64) -> f64| RATES.iter().map(|&r| (r, f(r))).collect::<Vec<_>>();
    let planned = at(&|r| inputs.bill(r, Mode::Planned, load).sluice());
    let realtime = at(&|r| inputs.bill(r, Mode::RealTime, load).sluice());
    let druid = at(&|r| inputs.bill(r, Mode::RealTime, load).druid);
    let all = planned.iter().chain(&realtime).chain(&druid).map(|p| p.1);
    let (low, high) = all.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let y = (10f64.powf(low.log10().floor()))..(10f64.powf(high.log10().ceil()));
    let x = RATES[0]..RATES[RATES.len() - 1];
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        let fail = |e: &dyn std::fmt::Display| anyhow!("plot: {e}");
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let caption = format!(
            "A month on AWS: {:.0} days kept, {:.0} queries a minute over the last {:.0} minutes",
            load.retention_days,
            load.queries_per_minute,
            load.window_secs / 60.0
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(12)
            .margin_right(40)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x.log_scale(), y.log_scale())
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc("rows/s")
            .y_desc("dollars a month")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(|e| fail(&e))?;
        let lines = [
            ("Sluice, planned ranges", planned, BLUE),
            ("Sluice, real-time tasks", realtime, GREEN),
            ("Druid, minimal HA cluster", druid, RED),
        ];
        for (name, points, color) in lines {
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|e| fail(&e))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled()))).map_err(|e| fail(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_plot_is_redrawn_from_the_committed_reports() {
        let args = CostArgs::committed();
        let inputs = Inputs::read(&args).expect("the committed reports");
        let drawn = svg(&inputs, &Load::of(&args)).expect("plot");
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let committed = std::fs::read_to_string(root.join("docs/cost.svg")).expect("docs/cost.svg");
        assert_eq!(committed, drawn, "docs/cost.svg differs from `sluice bench cost --plot` on bench/results");
        // Three lines of four points each.
        assert_eq!(drawn.matches("<circle").count(), 3 * RATES.len(), "{drawn}");
    }
}
