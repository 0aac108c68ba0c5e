//! Text for XML 1.0 (JUnit files, SVG figures, the HTML report): the one escaper.
//!
//! `&<>"'` become entities; TAB/LF/CR are kept (as character references in attributes); every
//! other control character, and U+FFFE/U+FFFF, is written as `\xNN` / `\u{NNNN}` text (XML 1.0
//! cannot carry them at all).

use std::fmt::Write;

/// Escapes text for XML 1.0 (see the module doc); `attr` also protects quotes and keeps
/// TAB/LF/CR as character references.
pub fn escape(s: &str, attr: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attr => out.push_str("&quot;"),
            '\'' if attr => out.push_str("&apos;"),
            '\t' | '\n' | '\r' if attr => {
                let _ = write!(out, "&#{};", c as u32);
            }
            '\t' | '\n' => out.push(c),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            '\u{fffe}' | '\u{ffff}' => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(escape("a<b>&\"'\t\n\r\u{0}\u{7f}\u{fffe}é", true), "a&lt;b&gt;&amp;&quot;&apos;&#9;&#10;&#13;\\x00\\x7f\\u{fffe}é");
        assert_eq!(escape("\"'\t\n\r\u{8}", false), "\"'\t\n&#13;\\x08");
    }
}
