//! SVG pictures as files of their own, drawn by templates as the page's are: the communication
//! matrix ([`heatmap_svg`], the same drawing as the page's) and predicted against measured on
//! log–log axes ([`chart_svg`], the validation charts). Every text is escaped by the template
//! engine; nothing is drawn by string concatenation.

use minijinja::{AutoEscape, Environment};
use mpiskel_logicalize::CommMatrix;
use serde::Serialize;

use crate::error::ReportError;
use crate::heatmap::Heatmap;

/// The templates, with the filters they use; every template escapes what it shows.
pub(crate) fn environment() -> Result<Environment<'static>, ReportError> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env.add_template("report.html", include_str!("../templates/report.html.j2"))?;
    env.add_template("heatmap.j2", include_str!("../templates/heatmap.j2"))?;
    env.add_template("heatmap.svg", include_str!("../templates/heatmap.svg.j2"))?;
    env.add_template("chart.svg", include_str!("../templates/chart.svg.j2"))?;
    env.add_filter("fixed", |x: f64, digits: usize| format!("{x:.digits$}"));
    env.add_filter("signed", |x: f64| format!("{x:+.1}"));
    Ok(env)
}

/// The communication matrix as an SVG document titled `title`: sender by row, receiver by
/// column, darker for more bytes (logarithmic); binned above [`crate::heatmap::HEATMAP_CELLS`] ranks.
pub fn heatmap_svg(m: &CommMatrix, title: &str) -> Result<String, ReportError> {
    let env = environment()?;
    let t = env.get_template("heatmap.svg")?;
    Ok(t.render(minijinja::context! { m => Heatmap::of(m), title => title })?)
}

/// One point of a chart: its series (one colour each), where it is, and its hover text.
#[derive(Debug, Clone)]
pub struct ChartPoint {
    /// Series (legend entry).
    pub series: String,
    /// Measured value (x), > 0.
    pub x: f64,
    /// Predicted value (y), > 0.
    pub y: f64,
    /// Hover text.
    pub tip: String,
}

/// Predicted against measured on log–log axes, with the diagonal and a band of ±`band` either
/// side.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Title.
    pub title: String,
    /// What x measures.
    pub x_label: String,
    /// What y measures.
    pub y_label: String,
    /// Relative width of the band either side of the diagonal (0.08: ±8 %).
    pub band: f64,
    /// The points.
    pub points: Vec<ChartPoint>,
}

/// Series colours, in order of first appearance.
const COLOURS: [&str; 8] =
    ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];

#[derive(Serialize)]
struct Tick {
    x: f64,
    y: f64,
    label: String,
}

#[derive(Serialize)]
struct Line {
    x1: f64,
    y1: f64,
    x2: f64,
    y2: f64,
    dash: &'static str,
}

#[derive(Serialize)]
struct Dot {
    x: f64,
    y: f64,
    colour: &'static str,
    tip: String,
}

#[derive(Serialize)]
struct Legend {
    y: f64,
    colour: &'static str,
    label: String,
}

/// A chart laid out in pixels, as its template draws it.
#[derive(Serialize)]
struct Layout {
    title: String,
    x_label: String,
    y_label: String,
    band_label: String,
    width: f64,
    height: f64,
    left: f64,
    top: f64,
    w: f64,
    h: f64,
    ticks: Vec<Tick>,
    lines: Vec<Line>,
    points: Vec<Dot>,
    legend: Vec<Legend>,
}

/// A tick's label: whole numbers without decimals.
fn tick_label(x: f64) -> String {
    if x >= 1.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// The chart as an SVG document: decades of both axes from the smallest to the largest value
/// (points at or below 0 are left out).
pub fn chart_svg(c: &Chart) -> Result<String, ReportError> {
    let vals: Vec<f64> =
        c.points.iter().flat_map(|p| [p.x, p.y]).filter(|x| *x > 0.0 && x.is_finite()).collect();
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min).max(1e-6);
    let hi = vals.iter().copied().fold(0.0, f64::max).max(lo * 10.0);
    let (l0, l1) = ((lo / 1.5).log10().floor(), (hi * 1.5).log10().ceil());
    let (w, h, left, top) = (560.0, 560.0, 70.0, 50.0);
    let sx = |x: f64| left + (x.log10() - l0) / (l1 - l0) * w;
    let sy = |y: f64| top + h - (y.log10() - l0) / (l1 - l0) * h;
    let mut ticks = Vec::new();
    let mut d = l0;
    while d <= l1 + 1e-9 {
        let x = 10f64.powf(d);
        ticks.push(Tick { x: sx(x), y: sy(x), label: tick_label(x) });
        d += 1.0;
    }
    let (a, b) = (10f64.powf(l0), 10f64.powf(l1));
    let lines = [(1.0, ""), (1.0 + c.band, "4 4"), (1.0 / (1.0 + c.band), "4 4")]
        .into_iter()
        .map(|(f, dash)| Line { x1: sx(a), y1: sy(a * f), x2: sx(b), y2: sy(b * f), dash })
        .collect();
    let mut series: Vec<&str> = Vec::new();
    for p in &c.points {
        if !series.contains(&p.series.as_str()) {
            series.push(&p.series);
        }
    }
    let colour =
        |s: &str| COLOURS[series.iter().position(|x| *x == s).unwrap_or(0) % COLOURS.len()];
    let points = c
        .points
        .iter()
        .filter(|p| p.x > 0.0 && p.y > 0.0 && p.x.is_finite() && p.y.is_finite())
        .map(|p| Dot { x: sx(p.x), y: sy(p.y), colour: colour(&p.series), tip: p.tip.clone() })
        .collect();
    let legend = series
        .iter()
        .enumerate()
        .map(|(k, s)| Legend {
            y: top + 10.0 + 18.0 * k as f64,
            colour: colour(s),
            label: s.to_string(),
        })
        .collect();
    let layout = Layout {
        title: c.title.clone(),
        x_label: c.x_label.clone(),
        y_label: c.y_label.clone(),
        band_label: format!("dashed: ±{:.0} %", 100.0 * c.band),
        width: left + w + 220.0,
        height: top + h + 60.0,
        left,
        top,
        w,
        h,
        ticks,
        lines,
        points,
        legend,
    };
    let env = environment()?;
    let t = env.get_template("chart.svg")?;
    Ok(t.render(minijinja::context! { c => layout })?)
}

/// One question of a what-if sweep: the parameter's value (as given and as a number) and the
/// predicted time.
#[derive(Debug, Clone)]
pub struct SweepPoint {
    /// The value as the user wrote it (`5MBps`).
    pub label: String,
    /// The value in base units (bytes/s, seconds, flop/s), > 0.
    pub value: f64,
    /// The predicted time, seconds, > 0.
    pub predicted_s: f64,
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A what-if sweep as an SVG line chart: predicted time against the parameter, both axes
/// logarithmic, each point labelled with the value as given.
pub fn sweep_svg(title: &str, parameter: &str, points: &[SweepPoint]) -> String {
    let pts: Vec<&SweepPoint> = points
        .iter()
        .filter(|p| {
            p.value > 0.0 && p.predicted_s > 0.0 && p.value.is_finite() && p.predicted_s.is_finite()
        })
        .collect();
    let (w, h, left, top) = (520.0, 320.0, 80.0, 50.0);
    let range = |v: Vec<f64>| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        let (a, b) = (lo.log10().floor(), hi.log10().ceil());
        if b > a {
            (a, b)
        } else {
            (a - 0.5, b + 0.5)
        }
    };
    let (x0, x1) =
        if pts.is_empty() { (0.0, 1.0) } else { range(pts.iter().map(|p| p.value).collect()) };
    let (y0, y1) = if pts.is_empty() {
        (0.0, 1.0)
    } else {
        range(pts.iter().map(|p| p.predicted_s).collect())
    };
    let sx = |x: f64| left + (x.log10() - x0) / (x1 - x0) * w;
    let sy = |y: f64| top + h - (y.log10() - y0) / (y1 - y0) * h;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"{left}\" y=\"24\" font-size=\"15\">{}</text>\n\
         <rect x=\"{left}\" y=\"{top}\" width=\"{w}\" height=\"{h}\" fill=\"none\" stroke=\"#999\"/>\n",
        left + w + 40.0,
        top + h + 60.0,
        xml_escape(title)
    );
    let mut d = y0;
    while d <= y1 + 1e-9 {
        let y = sy(10f64.powf(d));
        out += &format!(
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            left + w,
            left - 6.0,
            y + 4.0,
            10f64.powf(d)
        );
        d += 1.0;
    }
    let path: Vec<String> =
        pts.iter().map(|p| format!("{:.1},{:.1}", sx(p.value), sy(p.predicted_s))).collect();
    out += &format!(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n",
        path.join(" ")
    );
    for p in &pts {
        let (x, y) = (sx(p.value), sy(p.predicted_s));
        out += &format!(
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"#1f77b4\"><title>{} → {:.6} s</title></circle>\n\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
            xml_escape(&p.label),
            p.predicted_s,
            top + h + 18.0,
            xml_escape(&p.label)
        );
    }
    out += &format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n\
         <text x=\"18\" y=\"{:.1}\" transform=\"rotate(-90 18 {:.1})\" text-anchor=\"middle\">predicted time (s)</text>\n</svg>\n",
        left + w / 2.0,
        top + h + 42.0,
        xml_escape(parameter),
        top + h / 2.0,
        top + h / 2.0
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_draws_one_labelled_point_per_value_and_escapes_its_texts() {
        let p = |label: &str, value: f64, predicted_s: f64| SweepPoint {
            label: label.into(),
            value,
            predicted_s,
        };
        let svg = sweep_svg(
            "lu <W> & 16",
            "bandwidth",
            &[p("10Gbps", 1.25e9, 0.84), p("5MBps", 5e6, 24.9), p("bad", 0.0, 1.0)],
        );
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
        assert!(svg.contains("lu &lt;W&gt; &amp; 16"), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains(">5MBps<") && svg.contains("bandwidth"), "{svg}");
    }

    #[test]
    fn a_chart_escapes_its_texts_and_draws_every_point() {
        let c = Chart {
            title: "a <b> & c".into(),
            x_label: "measured (s)".into(),
            y_label: "predicted (s)".into(),
            band: 0.08,
            points: vec![
                ChartPoint { series: "ref".into(), x: 0.5, y: 0.52, tip: "bt <x>".into() },
                ChartPoint { series: "bw".into(), x: 2.0, y: 1.9, tip: "cg".into() },
                ChartPoint { series: "bw".into(), x: 0.0, y: 1.0, tip: "left out".into() },
            ],
        };
        let svg = chart_svg(&c).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
        assert!(svg.contains("a &lt;b&gt; &amp; c") && svg.contains("bt &lt;x&gt;"), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 2 + 2, "two points, two legend entries");
        assert!(svg.contains("dashed: ±8 %"), "{svg}");
    }
}
