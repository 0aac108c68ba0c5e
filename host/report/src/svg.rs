//! Hand-written SVG plots: a line plot (linear or log2 x axis, linear or log10 y axis, min–max
//! whiskers, vertical capacity markers) and a grouped bar chart. Both carry a title, a subtitle
//! naming the data source, an optional red warning line (emulated figures), axis labels and a
//! legend. Every point and bar has a `<title>` tooltip with its exact value.

use crate::metrics::sig;
use std::fmt::Write;

const W: f64 = 900.0;
const H: f64 = 470.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 232.0;
const BOTTOM: f64 = 64.0;
/// Longest legend entry, in characters, that fits the right margin.
const LEGEND_CHARS: usize = 27;
const PALETTE: [&str; 10] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];

/// Escapes text for SVG/HTML (attribute and element text alike): [`crate::xml::escape`].
pub fn esc(s: &str) -> String {
    crate::xml::escape(s, true)
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
    /// An inferred knee (dotted, orange, label from the bottom) rather than a capacity from the
    /// ID registers (dashed, grey, label from the top).
    pub knee: bool,
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
    /// log10 y axis (points ≤ 0 are left out).
    pub y_log: bool,
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
    /// (series name, one value per category; `None` = the series has no bar there).
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

/// The plot area and canvas size.
#[derive(Debug, Clone, Copy)]
struct Frame {
    h: f64,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    /// Baseline of the x axis title.
    xlabel_y: f64,
}

/// Height of one row of the marker key under a line plot.
const KEY_ROW: f64 = 17.0;

impl Frame {
    /// `extra_bottom`: room for rotated category labels; `key`: room for the marker key under
    /// the x axis title.
    fn new(l: &Labels, extra_bottom: f64, key: f64) -> Frame {
        let top = if l.warning.is_some() { 86.0 } else { 66.0 };
        let h = H + extra_bottom + key;
        Frame { h, x0: LEFT, x1: W - RIGHT, y0: top, y1: h - BOTTOM - extra_bottom - key, xlabel_y: h - 14.0 - key }
    }
}

/// Merges series whose points are identical (x, y and whiskers) into the first of them, named
/// `A = B`, so that no line hides another; returns the names of each merged group.
pub fn merge_identical(series: &mut Vec<Series>) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut out: Vec<Series> = Vec::new();
    let mut merged_into: Vec<Option<usize>> = Vec::new();
    for s in series.drain(..) {
        let same =
            |o: &Series| !s.points.is_empty() && o.points.len() == s.points.len() && o.points.iter().zip(&s.points).all(|(a, b)| a == b);
        match out.iter().position(same) {
            Some(i) => {
                let g = match merged_into[i] {
                    Some(g) => g,
                    None => {
                        groups.push(vec![out[i].name.clone()]);
                        merged_into[i] = Some(groups.len() - 1);
                        groups.len() - 1
                    }
                };
                groups[g].push(s.name.clone());
                out[i].name = groups[g].join(" = ");
            }
            None => {
                out.push(s);
                merged_into.push(None);
            }
        }
    }
    *series = out;
    groups
}

/// Maps a y value to axis units (identity or log10).
type YMap = fn(f64) -> f64;

/// "Nice" linear ticks covering [lo, hi].
fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo - 1.0, lo + 1.0) };
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let start = (lo / step).floor() * step;
    let mut t = Vec::new();
    let mut v = start;
    while v < hi + step * 0.999 && t.len() < 20 {
        t.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    t
}

/// log10 ticks covering [lo, hi] (both > 0): 1-2-5 steps when the range is short, decades
/// otherwise. Returns (ticks, log10 of the axis ends).
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, f64, f64) {
    let (a, b) = (lo.log10().floor(), hi.log10().ceil().max(lo.log10().floor() + 1.0));
    let mults: &[f64] = if b - a <= 3.0 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let mut t = Vec::new();
    let mut e = a;
    while e <= b {
        for m in mults {
            let v = m * 10f64.powf(e);
            if v <= 10f64.powf(b) * 1.0001 {
                t.push(v);
            }
        }
        e += 1.0;
    }
    (t, a, b)
}

/// A tick label short enough for the axis margin: SI multipliers from 10,000 on (`250M`, `1.5G`,
/// `12k`), 4 significant digits below.
pub fn si(v: f64) -> String {
    for (p, s) in [("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)] {
        if v.abs() >= s && (v.abs() >= 1e4 || s > 1e3) {
            return format!("{}{p}", sig(v / s, 3));
        }
    }
    sig(v, 4)
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

/// `text` cut with `…` to what fits between the left margin and the canvas edge at `px` pixels
/// per character.
fn fit(text: &str, px: f64) -> String {
    let max = ((W - LEFT - 8.0) / px) as usize;
    if text.chars().count() <= max {
        return text.to_string();
    }
    text.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
}

/// Colour and dash pattern of a marker line: knees dotted orange, capacities dashed grey.
fn marker_style(m: &Marker) -> (&'static str, &'static str) {
    if m.knee {
        ("#c04a00", "2 3")
    } else {
        ("#555", "5 4")
    }
}

/// Horizontal room of one marker tag.
const TAG_GAP: f64 = 11.0;

/// The tag of marker `i` (in x order): a, b, … z, then aa, ab, …
fn tag(i: usize) -> String {
    let letter = |k: usize| char::from(b'a' + (k % 26) as u8);
    if i < 26 {
        letter(i).to_string()
    } else {
        format!("{}{}", letter(i / 26 - 1), letter(i))
    }
}

fn header(s: &mut String, l: &Labels, f: &Frame) {
    let h = f.h;
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="DejaVu Sans, Arial, Helvetica, sans-serif" font-size="12">"#
    );
    let _ = write!(s, r##"<rect width="{W}" height="{h}" fill="#ffffff"/>"##);
    let _ = write!(s, r#"<text x="{LEFT}" y="24" font-size="16" font-weight="bold">{}</text>"#, esc(&fit(&l.title, 9.6)));
    let _ = write!(s, r##"<text x="{LEFT}" y="44" fill="#444">{}</text>"##, esc(&fit(&l.subtitle, 6.9)));
    if let Some(w) = &l.warning {
        let _ = write!(s, r##"<text x="{LEFT}" y="64" fill="#b00020" font-weight="bold">{}</text>"##, esc(&fit(w, 7.6)));
    }
}

fn frame_and_axis_labels(s: &mut String, l: &Labels, f: &Frame) {
    let _ = write!(s, r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>"##, f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
    // A long axis title must not run off the canvas: centred under the plot while it fits,
    // shifted right, then smaller.
    let chars = l.x.chars().count() as f64;
    let size = if chars * 6.6 > W - 12.0 { 10.0 } else { 12.0 };
    let half = chars * size * 0.55 / 2.0;
    let cx = ((f.x0 + f.x1) / 2.0).max(half + 6.0).min(W - half - 6.0);
    let _ = write!(s, r#"<text x="{cx:.1}" y="{}" text-anchor="middle" font-size="{size}">{}</text>"#, f.xlabel_y, esc(&l.x));
    let _ = write!(s, r#"<text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>"#, (f.y0 + f.y1) / 2.0, esc(&l.y));
}

fn y_axis(s: &mut String, f: &Frame, ticks: &[f64], ymap: &dyn Fn(f64) -> f64) {
    for &t in ticks {
        let y = ymap(t);
        if !(f.y0 - 0.5..=f.y1 + 0.5).contains(&y) {
            continue;
        }
        let _ = write!(
            s,
            r##"<line x1="{}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#e4e4e4"/><line x1="{}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#333"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            f.x0,
            f.x1,
            f.x0 - 5.0,
            f.x0,
            f.x0 - 8.0,
            y + 4.0,
            esc(&si(t))
        );
    }
}

/// Draws series marker `i` (shape by i % 4, hollow for odd i so overlapping series stay visible).
fn marker_shape(s: &mut String, i: usize, x: f64, y: f64, color: &str, tip: &str) {
    let paint = if i % 2 == 1 { format!(r#"fill="none" stroke="{color}" stroke-width="1.6""#) } else { format!(r#"fill="{color}""#) };
    let tip = format!("<title>{}</title>", esc(tip));
    let _ = match i % 4 {
        0 => write!(s, r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" {paint}>{tip}</circle>"#),
        1 => write!(s, r#"<rect x="{:.1}" y="{:.1}" width="7" height="7" {paint}>{tip}</rect>"#, x - 3.5, y - 3.5),
        2 => write!(
            s,
            r#"<path d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" {paint}>{tip}</path>"#,
            y - 4.5,
            x + 4.5,
            y + 3.5,
            x - 4.5,
            y + 3.5
        ),
        _ => write!(
            s,
            r#"<path d="M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z" {paint}>{tip}</path>"#,
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

/// A legend entry's text in lines of at most [`LEGEND_CHARS`] characters, broken at spaces
/// (at most 3 lines; the rest is cut with `…`).
fn legend_lines(name: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in name.split(' ') {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= LEGEND_CHARS => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    for l in &mut lines {
        if l.chars().count() > LEGEND_CHARS {
            *l = l.chars().take(LEGEND_CHARS - 1).collect::<String>() + "…";
        }
    }
    if lines.len() > 3 {
        lines.truncate(3);
        let last = &mut lines[2];
        *last = last.chars().take(LEGEND_CHARS - 1).collect::<String>() + "…";
    }
    lines
}

fn legend(s: &mut String, names: &[String], f: &Frame, bars: bool) {
    let x = f.x1 + 14.0;
    let mut y = f.y0 + 8.0;
    for (i, n) in names.iter().enumerate() {
        let lines = legend_lines(n);
        if y + (lines.len() as f64 - 1.0) * 14.0 > f.y1 - 4.0 {
            let _ = write!(s, r#"<text x="{x}" y="{y:.1}">… {} more series</text>"#, names.len() - i);
            break;
        }
        let c = PALETTE[i % PALETTE.len()];
        if bars {
            let _ = write!(s, r#"<rect x="{x}" y="{:.1}" width="16" height="10" fill="{c}"/>"#, y - 5.0);
        } else {
            let _ = write!(s, r#"<line x1="{x}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{c}" stroke-width="2"{}/>"#, x + 20.0, dash(i));
            marker_shape(s, i, x + 10.0, y, c, n);
        }
        let _ = write!(s, r#"<text x="{:.1}" y="{:.1}"><title>{}</title>"#, x + 26.0, y + 4.0, esc(n));
        for (k, l) in lines.iter().enumerate() {
            let _ = write!(s, r#"<tspan x="{:.1}" dy="{}">{}</tspan>"#, x + 26.0, if k == 0 { 0.0 } else { 14.0 }, esc(l));
        }
        s.push_str("</text>");
        y += 17.0 + (lines.len() as f64 - 1.0) * 14.0;
    }
}

fn no_data(s: &mut String, f: &Frame) {
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#888">no data</text>"##,
        (f.x0 + f.x1) / 2.0,
        (f.y0 + f.y1) / 2.0
    );
}

impl LinePlot {
    /// Renders the plot. Points with a non-finite value, a non-positive x on a log2 axis or a
    /// non-positive y on a log10 axis are left out.
    pub fn render(&self) -> String {
        let xlog = self.x_scale != XScale::Linear;
        let ylog = self.y_log;
        let ok = |p: &Point| p.y.is_finite() && p.x.is_finite() && (!xlog || p.x > 0.0) && (!ylog || p.y > 0.0);
        let pts: Vec<&Point> = self.series.iter().flat_map(|s| s.points.iter()).filter(|p| ok(p)).collect();
        let tx = |x: f64| if xlog { x.log2() } else { x };
        let markers: Vec<&Marker> = self.markers.iter().filter(|m| m.x.is_finite() && (!xlog || m.x > 0.0)).collect();
        let xs = pts.iter().map(|p| tx(p.x)).chain(markers.iter().map(|m| tx(m.x)));
        let (mut xlo, mut xhi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
        if !xlo.is_finite() {
            (xlo, xhi) = (0.0, 1.0);
        }
        if xlog {
            (xlo, xhi) = (xlo.floor(), xhi.ceil());
        }
        if xhi <= xlo {
            xhi = xlo + 1.0;
        }
        if !xlog {
            let pad = (xhi - xlo) * 0.03;
            (xlo, xhi) = (xlo - pad, xhi + pad);
        }
        let usable = |y: &f64| y.is_finite() && (!ylog || *y > 0.0);
        // The y range follows the medians: one outlier's max must not flatten every curve.
        // Whiskers are clipped to the plot area.
        let ys: Vec<f64> = pts.iter().map(|p| p.y).filter(usable).collect();
        let ymin = ys.iter().cloned().fold(f64::INFINITY, f64::min);
        let ymax = ys.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let (yticks, ylo, yhi, ty): (Vec<f64>, f64, f64, YMap) = if ylog {
            let (lo, hi) = if ymin.is_finite() { (ymin, ymax) } else { (1.0, 10.0) };
            let (t, a, b) = log_ticks(lo, hi);
            (t, a, b, f64::log10)
        } else {
            let (lo, hi) = if ymin.is_finite() { (ymin.min(0.0), ymax) } else { (0.0, 1.0) };
            let t = nice_ticks(lo, hi * 1.05);
            let (a, b) = (t[0].min(lo), *t.last().unwrap_or(&1.0));
            (t, a, b, |y| y)
        };
        let mut sorted_markers: Vec<&Marker> = markers.clone();
        sorted_markers.sort_by(|a, b| a.x.total_cmp(&b.x));
        let key = if markers.is_empty() { 0.0 } else { 12.0 + markers.len().div_ceil(2) as f64 * KEY_ROW };
        let f = Frame::new(&self.labels, 0.0, key);
        let xmap = |x: f64| f.x0 + (tx(x) - xlo) / (xhi - xlo) * (f.x1 - f.x0);
        let ymap = |y: f64| f.y1 - (ty(y) - ylo) / (yhi - ylo).max(f64::MIN_POSITIVE) * (f.y1 - f.y0);

        let mut s = String::new();
        header(&mut s, &self.labels, &f);
        if xlog {
            let span = (xhi - xlo) as usize;
            let every = span.div_ceil(12).max(1);
            let mut e = xlo as i64;
            while e as f64 <= xhi {
                let v = 2f64.powi(e as i32);
                let x = xmap(v);
                let _ = write!(s, r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#ececec"/>"##, f.y0, f.y1);
                if ((e - xlo as i64) as usize).is_multiple_of(every) {
                    let lab = if self.x_scale == XScale::Log2Bytes { short_bytes(v) } else { sig(v, 4) };
                    let _ = write!(
                        s,
                        r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#333"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                        f.y1,
                        f.y1 + 5.0,
                        f.y1 + 18.0,
                        esc(&lab)
                    );
                }
                e += 1;
            }
        } else {
            for t in nice_ticks(xlo, xhi).into_iter().filter(|t| (xlo..=xhi).contains(t)) {
                let x = xmap(t);
                let _ = write!(
                    s,
                    r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#ececec"/><line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#333"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                    f.y0,
                    f.y1,
                    f.y1,
                    f.y1 + 5.0,
                    f.y1 + 18.0,
                    esc(&si(t))
                );
            }
        }
        y_axis(&mut s, &f, &yticks, &ymap);
        for m in &markers {
            let x = xmap(m.x);
            let (color, dash) = marker_style(m);
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="{color}" stroke-width="1.4" stroke-dasharray="{dash}"><title>{}</title></line>"##,
                f.y0,
                f.y1,
                esc(&m.label)
            );
        }
        for (i, ser) in self.series.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            let mut p: Vec<&Point> = ser.points.iter().filter(|p| ok(p)).collect();
            p.sort_by(|a, b| a.x.total_cmp(&b.x));
            for q in &p {
                if let (Some(lo), Some(hi)) = (q.lo, q.hi) {
                    if usable(&lo) && usable(&hi) && hi > lo {
                        let x = xmap(q.x);
                        let _ = write!(
                            s,
                            r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{c}" stroke-opacity="0.45" stroke-width="3"/>"#,
                            ymap(lo).clamp(f.y0, f.y1),
                            ymap(hi).clamp(f.y0, f.y1)
                        );
                    }
                }
            }
            if p.len() > 1 {
                let d: Vec<String> = p.iter().map(|q| format!("{:.1},{:.1}", xmap(q.x), ymap(q.y))).collect();
                let _ = write!(s, r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="1.8"{}/>"#, d.join(" "), dash(i));
            }
            for q in &p {
                let xl = if self.x_scale == XScale::Log2Bytes { crate::metrics::human_bytes(q.x) } else { sig(q.x, 6) };
                let tip = format!("{}: {xl} → {}", ser.name, sig(q.y, 5));
                marker_shape(&mut s, i, xmap(q.x), ymap(q.y), c, &tip);
            }
        }
        // Marker labels never sit on the plot: a letter tag above each marker line (pushed
        // right when tags would touch) and a key under the x axis title, two entries a row.
        let mut x_tag = f64::NEG_INFINITY;
        for (i, m) in sorted_markers.iter().enumerate() {
            let (color, _) = marker_style(m);
            x_tag = xmap(m.x).max(x_tag + TAG_GAP);
            let _ = write!(
                s,
                r#"<text x="{x_tag:.1}" y="{:.1}" text-anchor="middle" font-size="11" font-weight="bold" fill="{color}">{}</text>"#,
                f.y0 - 5.0,
                tag(i)
            );
        }
        for (i, m) in sorted_markers.iter().enumerate() {
            let (color, dasharray) = marker_style(m);
            let (col, row) = (i % 2, i / 2);
            let x = LEFT + col as f64 * (W - LEFT - 12.0) / 2.0;
            let y = f.xlabel_y + 24.0 + row as f64 * KEY_ROW;
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="1.4" stroke-dasharray="{dasharray}"/><text x="{:.1}" y="{y:.1}" font-size="11" font-weight="bold" fill="{color}">{}</text><text x="{:.1}" y="{y:.1}" font-size="11" fill="#333">{}</text>"##,
                y - 4.0,
                x + 20.0,
                y - 4.0,
                x + 26.0,
                tag(i),
                x + 38.0,
                esc(&m.label)
            );
        }
        frame_and_axis_labels(&mut s, &self.labels, &f);
        let names: Vec<String> = self.series.iter().map(|s| s.name.clone()).collect();
        legend(&mut s, &names, &f, false);
        if pts.is_empty() {
            no_data(&mut s, &f);
        }
        s.push_str("</svg>");
        s
    }
}

impl BarChart {
    /// Renders the chart. Each category shows bars only for the series that have a value
    /// there (`None` = no bar); a non-finite value is drawn as "n/a".
    pub fn render(&self) -> String {
        let vals: Vec<f64> = self.series.iter().flat_map(|(_, v)| v.iter().flatten().cloned()).filter(|v| v.is_finite()).collect();
        let ymin = vals.iter().cloned().fold(0.0f64, f64::min);
        let ymax = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let ymax = if ymax.is_finite() { ymax } else { 1.0 };
        let yticks = nice_ticks(ymin, ymax * 1.08);
        let (ylo, yhi) = (yticks[0].min(ymin), *yticks.last().unwrap_or(&1.0));
        let n = self.categories.len().max(1) as f64;
        let group = (W - RIGHT - LEFT) / n;
        let longest = self.categories.iter().map(|c| c.chars().count()).max().unwrap_or(0);
        let rotate = longest as f64 * 6.8 > group;
        // Rotated labels (30°) need room below the axis: about 3.4 px per character.
        let extra = if rotate { (longest.min(40) as f64 * 3.4 - 10.0).max(0.0) } else { 0.0 };
        let f = Frame::new(&self.labels, extra, 0.0);
        let ymap = |y: f64| f.y1 - (y - ylo) / (yhi - ylo).max(f64::MIN_POSITIVE) * (f.y1 - f.y0);
        let mut s = String::new();
        header(&mut s, &self.labels, &f);
        y_axis(&mut s, &f, &yticks, &ymap);
        let most = (0..self.categories.len())
            .map(|ci| self.series.iter().filter(|(_, v)| v.get(ci).is_some_and(|x| x.is_some())).count())
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let bw = group * 0.8 / most;
        for (ci, cat) in self.categories.iter().enumerate() {
            let present: Vec<(usize, &str, f64)> = self
                .series
                .iter()
                .enumerate()
                .filter_map(|(si, (name, v))| v.get(ci).cloned().flatten().map(|x| (si, name.as_str(), x)))
                .collect();
            let cx = f.x0 + group * (ci as f64 + 0.5);
            let start = cx - bw * present.len() as f64 / 2.0;
            for (k, (si, name, val)) in present.iter().enumerate() {
                let x = start + bw * k as f64;
                if val.is_finite() {
                    let (ya, yb) = (ymap(val.max(ylo)), ymap(0f64.max(ylo)));
                    let _ = write!(
                        s,
                        r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                        ya.min(yb),
                        (bw - 1.0).max(1.0),
                        (yb - ya).abs(),
                        PALETTE[si % PALETTE.len()],
                        esc(&format!("{cat} / {name}: {}", sig(*val, 5)))
                    );
                } else {
                    let _ = write!(
                        s,
                        r##"<text x="{:.1}" y="{:.1}" font-size="9" fill="#888" text-anchor="middle">n/a</text>"##,
                        x + bw / 2.0,
                        f.y1 - 4.0
                    );
                }
            }
            if rotate {
                let _ = write!(
                    s,
                    r#"<text transform="translate({cx:.1},{:.1}) rotate(-30)" text-anchor="end" font-size="11">{}</text>"#,
                    f.y1 + 14.0,
                    esc(cat)
                );
            } else {
                let _ = write!(s, r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, f.y1 + 18.0, esc(cat));
            }
        }
        frame_and_axis_labels(&mut s, &self.labels, &f);
        let names: Vec<String> = self.series.iter().map(|(n, _)| n.clone()).collect();
        legend(&mut s, &names, &f, true);
        if vals.is_empty() {
            no_data(&mut s, &f);
        }
        s.push_str("</svg>");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> Labels {
        Labels { title: "T <1>".into(), subtitle: "source: cntvct".into(), warning: Some("EMULATED".into()), x: "x".into(), y: "y".into() }
    }

    fn pt(x: f64, y: f64) -> Point {
        Point { x, y, lo: None, hi: None }
    }

    #[test]
    fn tick_labels_use_si_multipliers() {
        assert_eq!(si(250_000_000.0), "250M");
        assert_eq!(si(1_500_000_000.0), "1.5G");
        assert_eq!(si(12_000.0), "12k");
        assert_eq!(si(2500.0), "2500");
        assert_eq!(si(0.25), "0.25");
        assert_eq!(si(-3_000_000.0), "-3M");
    }

    #[test]
    fn ticks_are_nice() {
        assert_eq!(nice_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(nice_ticks(5.0, 5.0), vec![4.0, 4.5, 5.0, 5.5, 6.0]);
        assert_eq!(log_ticks(1.5, 130.0), (vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0], 0.0, 3.0));
        assert_eq!(log_ticks(0.01, 1e4).0, vec![0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0]);
        assert_eq!(short_bytes(1024.0), "1K");
        assert_eq!(short_bytes(1.5 * 1048576.0), "1.5M");
        assert_eq!(short_bytes(512.0), "512");
    }

    #[test]
    fn line_plot_has_axes_markers_legend_and_escapes() {
        let p = LinePlot {
            labels: labels(),
            x_scale: XScale::Log2Bytes,
            y_log: false,
            series: vec![Series {
                name: "wb & co".into(),
                points: vec![Point { x: 1024.0, y: 2.0, lo: Some(1.0), hi: Some(3.0) }, pt(1048576.0, 9.0), pt(0.0, 1.0)],
            }],
            markers: vec![
                Marker { x: 32768.0, label: "L1D 32 KiB".into(), knee: false },
                Marker { x: 40960.0, label: "knee 40 KiB (wb)".into(), knee: true },
            ],
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
            "knee 40 KiB (wb)",
            "stroke-dasharray=\"2 3\"",
            "wb &amp; co",
            "<polyline",
            "stroke-dasharray=\"5 4\"",
        ] {
            assert!(svg.contains(needle), "{needle}");
        }
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn marker_labels_never_sit_on_the_plot() {
        // Knees and capacities at (nearly) one x: tags above the frame that do not touch, and
        // every label once in the key under the x axis title, outside the plot area.
        let mk = |x: f64, knee| Marker { x, label: format!("m{x}"), knee };
        let p = LinePlot {
            labels: labels(),
            x_scale: XScale::Log2Bytes,
            y_log: false,
            series: vec![Series { name: "s".into(), points: vec![pt(1024.0, 1.0), pt(1048576.0 * 4.0, 2.0)] }],
            markers: vec![mk(40960.0, true), mk(49152.0, true), mk(32768.0, false), mk(32768.5, false)],
        };
        let svg = p.render();
        assert!(!svg.contains("rotate(90)"), "no label along a marker line");
        let frame_top: f64 = 86.0;
        let tags: Vec<f64> = svg
            .split("<text x=\"")
            .skip(1)
            .filter(|c| c.contains("font-weight=\"bold\"") && c.contains(&format!("y=\"{:.1}\"", frame_top - 5.0)))
            .map(|c| c[..c.find('"').unwrap()].parse().unwrap())
            .collect();
        assert_eq!(tags.len(), 4, "{svg}");
        assert!(tags.windows(2).all(|w| w[1] - w[0] >= TAG_GAP - 0.05), "{tags:?}");
        for (i, m) in ["m32768", "m32768.5", "m40960", "m49152"].iter().enumerate() {
            assert_eq!(svg.matches(&format!(">{m}</text>")).count(), 1, "{m} once, in the key");
            assert!(svg.contains(&format!(">{}</text><text", tag(i))), "tag {} in the key", tag(i));
        }
        // The key sits below the x axis title: the canvas grew by its rows.
        assert!(svg.contains(&format!("height=\"{}\"", H + 12.0 + 2.0 * KEY_ROW)), "{svg}");
    }

    #[test]
    fn identical_series_are_drawn_once_and_named_together() {
        let a = Series { name: "normal-wb".into(), points: vec![pt(1.0, 6.0), pt(2.0, 6.0)] };
        let b = Series { name: "normal-nc".into(), ..a.clone() };
        let c = Series { name: "device".into(), points: vec![pt(1.0, 6.0), pt(2.0, 7.0)] };
        let d = Series { name: "normal-wt".into(), ..a.clone() };
        let mut v = vec![a, b, c, d];
        let groups = merge_identical(&mut v);
        assert_eq!(groups, vec![vec!["normal-wb".to_string(), "normal-nc".into(), "normal-wt".into()]]);
        assert_eq!(v.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["normal-wb = normal-nc = normal-wt", "device"]);
        assert_eq!(legend_lines("normal-wb = normal-nc = normal-wt"), ["normal-wb = normal-nc =", "normal-wt"]);
    }

    #[test]
    fn log_y_drops_non_positive_points() {
        let p = LinePlot {
            labels: labels(),
            x_scale: XScale::Log2,
            y_log: true,
            series: vec![Series { name: "s".into(), points: vec![pt(16.0, 1.5), pt(32.0, 0.0), pt(64.0, 120.0)] }],
            markers: vec![],
        };
        let svg = p.render();
        assert_eq!(svg.matches("<circle").count(), 3, "2 points + the legend sample");
        assert!(svg.contains(">1000<") && svg.contains(">1<") && !svg.contains("NaN"));
    }

    #[test]
    fn bar_chart_and_empty_plots() {
        let b = BarChart {
            labels: labels(),
            categories: vec!["read".into(), "write".into()],
            series: vec![("wb".into(), vec![Some(5.0), None]), ("nc".into(), vec![Some(1.0), Some(f64::NAN)])],
        };
        let svg = b.render();
        assert!(svg.contains(">read<") && svg.contains("read / wb: 5"));
        assert_eq!(svg.matches(">n/a<").count(), 1, "NaN is n/a; an absent series is no bar");
        assert!(!svg.contains("NaN"));
        let empty = LinePlot { labels: labels(), x_scale: XScale::Log2, y_log: false, series: vec![], markers: vec![] }.render();
        assert!(empty.contains("no data") && !empty.contains("NaN") && !empty.contains("inf"));
    }
}
