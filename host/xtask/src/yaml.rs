//! A small YAML writer for JSON values: block mappings and sequences, strings single-quoted
//! (regular expressions stay readable: YAML single quotes only double `'`), strings with
//! control characters double-quoted with JSON escapes (valid YAML). Keys that YAML 1.1 could
//! read as something else than a plain string are quoted.

use serde_json::Value;

/// `value` as a YAML document (ends with a newline).
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(_) | Value::Array(_) if !is_empty(value) => block(value, 0, &mut out),
        _ => {
            out.push_str(&scalar(value));
            out.push('\n');
        }
    }
    out
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn block(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.push_str(&pad);
                out.push_str(&key(k));
                out.push(':');
                nested(v, indent, out);
            }
        }
        Value::Array(items) => {
            for v in items {
                out.push_str(&pad);
                out.push('-');
                match v {
                    Value::Object(m) if !m.is_empty() => {
                        // First key on the dash line, the rest aligned under it.
                        let mut inner = String::new();
                        block(v, indent + 2, &mut inner);
                        out.push(' ');
                        out.push_str(&inner[indent + 2..]);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push('\n');
                        block(v, indent + 2, out);
                    }
                    _ => {
                        out.push(' ');
                        out.push_str(&scalar(v));
                        out.push('\n');
                    }
                }
            }
        }
        _ => {
            out.push_str(&pad);
            out.push_str(&scalar(value));
            out.push('\n');
        }
    }
}

/// After `key:`: a scalar on the same line, a collection below.
fn nested(v: &Value, indent: usize, out: &mut String) {
    if is_empty(v) || !matches!(v, Value::Object(_) | Value::Array(_)) {
        out.push(' ');
        out.push_str(&scalar(v));
        out.push('\n');
    } else {
        out.push('\n');
        block(v, indent + 2, out);
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

fn string(s: &str) -> String {
    if s.chars().any(|c| c.is_control()) {
        serde_json::to_string(s).expect("a string serialises")
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

/// Words YAML 1.1 (PyYAML) resolves to booleans or null when plain.
const SPECIAL: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"];

fn key(k: &str) -> String {
    let plain = k.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && k.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
        && !SPECIAL.contains(&k);
    if plain {
        k.to_string()
    } else {
        string(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_style() {
        let v = json!({"a": 1, "b": {"c": "x'y", "d": []}, "e": [{"f": true, "g": null}, "h", [1]], "not ok": "fail", "on": {}});
        assert_eq!(
            to_yaml(&v),
            "a: 1\nb:\n  c: 'x''y'\n  d: []\ne:\n  - f: true\n    g: null\n  - 'h'\n  -\n    - 1\n'not ok': 'fail'\n'on': {}\n"
        );
    }

    #[test]
    fn regex_and_control_characters() {
        assert_eq!(to_yaml(&json!({"p": r"\r*\n"})), "p: '\\r*\\n'\n");
        assert_eq!(to_yaml(&json!({"p": "a\nb"})), "p: \"a\\nb\"\n");
    }
}
