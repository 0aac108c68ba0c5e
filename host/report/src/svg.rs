//! Hand-written SVG plots: a line plot (linear or log2 x axis, optional min–max whiskers,
//! vertical capacity markers) and a grouped bar chart. Both carry a title, a subtitle naming the
//! data source, an optional warning line (emulated figures), axis labels and a legend.

use crate::metrics::sig;
use std::fmt::Write;

const W: f64 = 860.0;
const H: f64 = 470.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 210.0;
const BOTTOM: f64 = 64.0;
const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];

/// Escapes text for SVG/HTML.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One point of a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// X value.
    pub x: f64,
    /// Y value (the median).
    pub y: f64,
    /// Lower whisker (min), if any.
    pub lo: Option<f64>,
    /// Upper whisker (max), if any.
    pub hi: Option<f64>,
}

/// A named series.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points (sorted by x when drawn).
    pub points: Vec<Point>,
}

/// A vertical marker line.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    /// Position on the x axis.
    pub x: f64,
    /// Label drawn along the line.
    pub label: String,
}

/// How the x axis is scaled and labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XScale {
    /// log2, ticks labelled as byte sizes (`4K`, `1M`).
    Log2Bytes,
    /// log2, ticks labelled as plain numbers.
    Log2,
    /// Linear.
    Linear,
}

/// Texts around a plot.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Labels {
    /// Title.
    pub title: String,
    /// Subtitle (the data source).
    pub subtitle: String,
    /// A warning shown in red under the subtitle (emulated figures).
    pub warning: Option<String>,
    /// X axis label.
    pub x: String,
    /// Y axis label.
    pub y: String,
}

/// A line plot.
#[derive(Debug, Clone, PartialEq)]
pub struct LinePlot {
    /// Texts.
    pub labels: Labels,
    /// X scale.
    pub x_scale: XScale,
    /// Series.
    pub series: Vec<Series>,
    /// Vertical markers.
    pub markers: Vec<Marker>,
}

/// A grouped bar chart.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// Texts (`x` names the categories).
    pub labels: Labels,
    /// Category names along the x axis.
    pub categories: Vec<String>,
    /// (series name, one value per category).
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

fn top_margin(l: &Labels) -> f64 {
    if l.warning.is_some() {
        86.0
    } else {
        66.0
    }
}

/// "Nice" linear ticks covering [lo, hi].
fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).floor() * step;
    let mut t = Vec::new();
    let mut v = start;
    while v < hi + step * 0.999 && t.len() < 20 {
        t.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    t
}

/// Compact byte label: 512, 1K, 48K, 1M, 1.5M, 2G.
pub fn short_bytes(b: f64) -> String {
    let units = [("G", 1073741824.0), ("M", 1048576.0), ("K", 1024.0)];
    for (u, s) in units {
        if b >= s {
            return format!("{}{u}", sig(b / s, 3));
        }
    }
    sig(b, 3)
}

fn header(s: &mut String, l: &Labels) {
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Arial, Helvetica, sans-serif" font-size="12">"#
    );
    let _ = write!(s, r##"<rect width="{W}" height="{H}" fill="#ffffff"/>"##);
    let _ = write!(
        s,
        r#"<text x="{}" y="24" font-size="16" font-weight="bold">{}</text>"#,
        LEFT,
        esc(&l.title)
    );
    let _ = write!(
        s,
        r##"<text x="{}" y="44" fill="#444">{}</text>"##,
        LEFT,
        esc(&l.subtitle)
    );
    if let Some(w) = &l.warning {
        let _ = write!(
            s,
            r##"<text x="{}" y="64" fill="#b00020" font-weight="bold">{}</text>"##,
            LEFT,
            esc(w)
        );
    }
}

fn axes(s: &mut String, l: &Labels, top: f64) {
    let (x0, x1, y1) = (LEFT, W - RIGHT, H - BOTTOM);
    let _ = write!(
        s,
        r##"<rect x="{x0}" y="{top}" width="{}" height="{}" fill="none" stroke="#333"/>"##,
        x1 - x0,
        y1 - top
    );
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (x0 + x1) / 2.0,
        H - 14.0,
        esc(&l.x)
    );
    let _ = write!(
        s,
        r#"<text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (top + y1) / 2.0,
        esc(&l.y)
    );
}

fn y_axis(s: &mut String, ticks: &[f64], ymap: &dyn Fn(f64) -> f64) {
    for &t in ticks {
        let y = ymap(t);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#e4e4e4"/>"##,
            W - RIGHT
        );
        let _ = write!(
            s,
            r##"<line x1="{}" y1="{y:.1}" x2="{LEFT}" y2="{y:.1}" stroke="#333"/>"##,
            LEFT - 5.0
        );
        let _ = write!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 8.0,
            y + 4.0,
            esc(&sig(t, 4))
        );
    }
}

fn marker_shape(s: &mut String, i: usize, x: f64, y: f64, color: &str, tip: &str) {
    let tip = format!("<title>{}</title>", esc(tip));
    let _ = match i % 4 {
        0 => write!(
            s,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{color}">{tip}</circle>"#
        ),
        1 => write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="7" height="7" fill="{color}">{tip}</rect>"#,
            x - 3.5,
            y - 3.5
        ),
        2 => write!(
            s,
            r#"<path d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{color}">{tip}</path>"#,
            y - 4.5,
            x + 4.5,
            y + 3.5,
            x - 4.5,
            y + 3.5
        ),
        _ => write!(
            s,
            r#"<path d="M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z" fill="{color}">{tip}</path>"#,
            y - 4.5,
            x + 4.5,
            y + 4.5,
            x - 4.5
        ),
    };
}

fn dash(i: usize) -> &'static str {
    if i < PALETTE.len() {
        ""
    } else {
        r#" stroke-dasharray="6 3""#
    }
}

fn legend(s: &mut String, names: &[String], top: f64, bars: bool) {
    let x = W - RIGHT + 14.0;
    for (i, n) in names.iter().enumerate().take(22) {
        let y = top + 8.0 + i as f64 * 17.0;
        let c = PALETTE[i % PALETTE.len()];
        if bars {
            let _ = write!(
                s,
                r#"<rect x="{x}" y="{:.1}" width="16" height="10" fill="{c}"/>"#,
                y - 5.0
            );
        } else {
            let _ = write!(
                s,
                r#"<line x1="{x}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{c}" stroke-width="2"{}/>"#,
                x + 20.0,
                dash(i)
            );
            marker_shape(s, i, x + 10.0, y, c, n);
        }
        let mut label: String = n.chars().take(26).collect();
        if label.len() < n.len() {
            label.push('…');
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            x + 26.0,
            y + 4.0,
            esc(&label)
        );
    }
    if names.len() > 22 {
        let _ = write!(
            s,
            r#"<text x="{x}" y="{:.1}">… {} more series</text>"#,
            top + 8.0 + 22.0 * 17.0,
            names.len() - 22
        );
    }
}

impl LinePlot {
    /// Renders the plot; points with a non-finite value or a non-positive x on a log axis are
    /// left out.
    pub fn render(&self) -> String {
        let log = self.x_scale != XScale::Linear;
        let ok = |p: &Point| p.y.is_finite() && p.x.is_finite() && (!log || p.x > 0.0);
        let pts: Vec<&Point> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| ok(p))
            .collect();
        let tx = |x: f64| if log { x.log2() } else { x };
        let mut xs: Vec<f64> = pts.iter().map(|p| tx(p.x)).collect();
        xs.extend(
            self.markers
                .iter()
                .filter(|m| m.x.is_finite() && (!log || m.x > 0.0))
                .map(|m| tx(m.x)),
        );
        let (mut xlo, mut xhi) = xs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        if !xlo.is_finite() {
            (xlo, xhi) = (0.0, 1.0);
        }
        if log {
            xlo = xlo.floor();
            xhi = xhi.ceil();
        }
        if xhi <= xlo {
            xhi = xlo + 1.0;
        }
        if !log {
            let pad = (xhi - xlo) * 0.03;
            (xlo, xhi) = (xlo - pad, xhi + pad);
        }
        let ys: Vec<f64> = pts
            .iter()
            .flat_map(|p| [Some(p.y), p.lo, p.hi])
            .flatten()
            .filter(|y| y.is_finite())
            .collect();
        let ymin = ys.iter().cloned().fold(0.0f64, f64::min);
        let ymax = ys.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let ymax = if ymax.is_finite() { ymax } else { 1.0 };
        let yticks = nice_ticks(ymin, ymax * 1.05);
        let (ylo, yhi) = (yticks[0].min(ymin), *yticks.last().unwrap_or(&1.0));
        let top = top_margin(&self.labels);
        let (x0, x1, y0, y1) = (LEFT, W - RIGHT, top, H - BOTTOM);
        let xmap = |x: f64| x0 + (tx(x) - xlo) / (xhi - xlo) * (x1 - x0);
        let ymap = |y: f64| y1 - (y - ylo) / (yhi - ylo).max(f64::MIN_POSITIVE) * (y1 - y0);

        let mut s = String::new();
        header(&mut s, &self.labels);
        // x ticks
        if log {
            let span = (xhi - xlo) as usize;
            let every = span.div_ceil(12).max(1);
            let mut e = xlo as i64;
            while e as f64 <= xhi {
                let v = 2f64.powi(e as i32);
                let x = xmap(v);
                let _ = write!(
                    s,
                    r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#ececec"/>"##
                );
                if ((e - xlo as i64) as usize).is_multiple_of(every) {
                    let lab = if self.x_scale == XScale::Log2Bytes {
                        short_bytes(v)
                    } else {
                        sig(v, 4)
                    };
                    let _ = write!(
                        s,
                        r##"<line x1="{x:.1}" y1="{y1}" x2="{x:.1}" y2="{}" stroke="#333"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                        y1 + 5.0,
                        y1 + 18.0,
                        esc(&lab)
                    );
                }
                e += 1;
            }
        } else {
            for t in nice_ticks(xlo, xhi) {
                if t < xlo || t > xhi {
                    continue;
                }
                let x = xmap(t);
                let _ = write!(
                    s,
                    r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#ececec"/><line x1="{x:.1}" y1="{y1}" x2="{x:.1}" y2="{}" stroke="#333"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                    y1 + 5.0,
                    y1 + 18.0,
                    esc(&sig(t, 4))
                );
            }
        }
        y_axis(&mut s, &yticks, &ymap);
        // capacity markers
        for m in self
            .markers
            .iter()
            .filter(|m| m.x.is_finite() && (!log || m.x > 0.0))
        {
            let x = xmap(m.x);
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#555" stroke-width="1.2" stroke-dasharray="5 4"><title>{}</title></line>"##,
                esc(&m.label)
            );
            let _ = write!(
                s,
                r##"<text transform="translate({:.1},{:.1}) rotate(90)" fill="#333" font-size="11">{}</text>"##,
                x + 4.0,
                y0 + 6.0,
                esc(&m.label)
            );
        }
        // series
        for (i, ser) in self.series.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            let mut p: Vec<&Point> = ser.points.iter().filter(|p| ok(p)).collect();
            p.sort_by(|a, b| a.x.total_cmp(&b.x));
            for q in &p {
                if let (Some(lo), Some(hi)) = (q.lo, q.hi) {
                    if lo.is_finite() && hi.is_finite() && hi > lo {
                        let x = xmap(q.x);
                        let _ = write!(
                            s,
                            r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{c}" stroke-opacity="0.45" stroke-width="3"/>"#,
                            ymap(lo),
                            ymap(hi)
                        );
                    }
                }
            }
            if p.len() > 1 {
                let d: Vec<String> = p
                    .iter()
                    .map(|q| format!("{:.1},{:.1}", xmap(q.x), ymap(q.y)))
                    .collect();
                let _ = write!(
                    s,
                    r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="1.8"{}/>"#,
                    d.join(" "),
                    dash(i)
                );
            }
            for q in &p {
                let xl = if self.x_scale == XScale::Log2Bytes {
                    crate::metrics::human_bytes(q.x)
                } else {
                    sig(q.x, 6)
                };
                marker_shape(
                    &mut s,
                    i,
                    xmap(q.x),
                    ymap(q.y),
                    c,
                    &format!("{}: {xl} → {}", ser.name, sig(q.y, 5)),
                );
            }
        }
        axes(&mut s, &self.labels, top);
        let names: Vec<String> = self.series.iter().map(|s| s.name.clone()).collect();
        legend(&mut s, &names, top, false);
        if pts.is_empty() {
            let _ = write!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#888">no data</text>"##,
                (x0 + x1) / 2.0,
                (y0 + y1) / 2.0
            );
        }
        s.push_str("</svg>");
        s
    }
}

impl BarChart {
    /// Renders the chart; missing or non-finite values are drawn as "n/a".
    pub fn render(&self) -> String {
        let vals: Vec<f64> = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten().cloned())
            .filter(|v| v.is_finite())
            .collect();
        let ymin = vals.iter().cloned().fold(0.0f64, f64::min);
        let ymax = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let ymax = if ymax.is_finite() { ymax } else { 1.0 };
        let yticks = nice_ticks(ymin, ymax * 1.08);
        let (ylo, yhi) = (yticks[0].min(ymin), *yticks.last().unwrap_or(&1.0));
        let top = top_margin(&self.labels);
        let (x0, x1, y0, y1) = (LEFT, W - RIGHT, top, H - BOTTOM);
        let ymap = |y: f64| y1 - (y - ylo) / (yhi - ylo).max(f64::MIN_POSITIVE) * (y1 - y0);
        let mut s = String::new();
        header(&mut s, &self.labels);
        y_axis(&mut s, &yticks, &ymap);
        let n = self.categories.len().max(1) as f64;
        let group = (x1 - x0) / n;
        let k = self.series.len().max(1) as f64;
        let bw = group * 0.8 / k;
        let rotate = self
            .categories
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0) as f64
            * 6.5
            > group;
        for (ci, cat) in self.categories.iter().enumerate() {
            let gx = x0 + group * ci as f64 + group * 0.1;
            for (si, (name, v)) in self.series.iter().enumerate() {
                let x = gx + bw * si as f64;
                match v.get(ci).cloned().flatten().filter(|v| v.is_finite()) {
                    Some(val) => {
                        let (ya, yb) = (ymap(val.max(ylo)), ymap(0f64.max(ylo)));
                        let _ = write!(
                            s,
                            r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                            ya.min(yb),
                            bw.max(1.0) - 1.0,
                            (yb - ya).abs(),
                            PALETTE[si % PALETTE.len()],
                            esc(&format!("{cat} / {name}: {}", sig(val, 5)))
                        );
                    }
                    None => {
                        let _ = write!(
                            s,
                            r##"<text x="{:.1}" y="{:.1}" font-size="9" fill="#888" text-anchor="middle">n/a</text>"##,
                            x + bw / 2.0,
                            y1 - 4.0
                        );
                    }
                }
            }
            let cx = x0 + group * (ci as f64 + 0.5);
            if rotate {
                let _ = write!(
                    s,
                    r#"<text transform="translate({cx:.1},{:.1}) rotate(-25)" text-anchor="end" font-size="11">{}</text>"#,
                    y1 + 14.0,
                    esc(cat)
                );
            } else {
                let _ = write!(
                    s,
                    r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                    y1 + 18.0,
                    esc(cat)
                );
            }
        }
        axes(&mut s, &self.labels, top);
        let names: Vec<String> = self.series.iter().map(|(n, _)| n.clone()).collect();
        legend(&mut s, &names, top, true);
        if vals.is_empty() {
            let _ = write!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#888">no data</text>"##,
                (x0 + x1) / 2.0,
                (y0 + y1) / 2.0
            );
        }
        s.push_str("</svg>");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> Labels {
        Labels {
            title: "T <1>".into(),
            subtitle: "source: cntvct".into(),
            warning: Some("EMULATED".into()),
            x: "x".into(),
            y: "y".into(),
        }
    }

    #[test]
    fn ticks_are_nice() {
        assert_eq!(nice_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(
            nice_ticks(0.0, 0.9),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        assert_eq!(nice_ticks(5.0, 5.0), vec![4.0, 4.5, 5.0, 5.5, 6.0]);
        assert_eq!(short_bytes(1024.0), "1K");
        assert_eq!(short_bytes(1.5 * 1048576.0), "1.5M");
        assert_eq!(short_bytes(512.0), "512");
    }

    #[test]
    fn line_plot_has_axes_markers_legend_and_escapes() {
        let p = LinePlot {
            labels: labels(),
            x_scale: XScale::Log2Bytes,
            series: vec![Series {
                name: "wb & co".into(),
                points: vec![
                    Point {
                        x: 1024.0,
                        y: 2.0,
                        lo: Some(1.0),
                        hi: Some(3.0),
                    },
                    Point {
                        x: 1048576.0,
                        y: 9.0,
                        lo: None,
                        hi: None,
                    },
                    Point {
                        x: 0.0,
                        y: 1.0,
                        lo: None,
                        hi: None,
                    },
                ],
            }],
            markers: vec![Marker {
                x: 32768.0,
                label: "L1D 32 KiB".into(),
            }],
        };
        let svg = p.render();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        for needle in [
            "T &lt;1&gt;",
            "source: cntvct",
            "EMULATED",
            ">1K<",
            ">1M<",
            "L1D 32 KiB",
            "wb &amp; co",
            "<polyline",
            "stroke-dasharray=\"5 4\"",
        ] {
            assert!(svg.contains(needle), "{needle}");
        }
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn bar_chart_and_empty_plots() {
        let b = BarChart {
            labels: labels(),
            categories: vec!["read".into(), "write".into()],
            series: vec![
                ("wb".into(), vec![Some(5.0), None]),
                ("nc".into(), vec![Some(1.0), Some(f64::NAN)]),
            ],
        };
        let svg = b.render();
        assert!(svg.contains(">read<") && svg.contains("n/a") && svg.contains("read / wb: 5"));
        assert!(!svg.contains("NaN"));
        let empty = LinePlot {
            labels: labels(),
            x_scale: XScale::Log2,
            series: vec![],
            markers: vec![],
        }
        .render();
        assert!(empty.contains("no data") && !empty.contains("NaN") && !empty.contains("inf"));
    }
}
