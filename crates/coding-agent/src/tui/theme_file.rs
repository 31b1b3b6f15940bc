//! `--theme NAME|FILE` (pi's flag; DECISIONS §23.159): `default` (the 16-colour theme that
//! follows the terminal's palette), `mono` (no colour), or a JSON file naming a colour per
//! style, `{"colors": {"accent": "#5fd7ff", "dim": 244, "user": "blue"}}`, laid over the
//! default theme. `NO_COLOR` still wins: a file is checked, then drawn without colour.

use std::path::Path;

use ratatui::style::{Color, Style};
use serde_json::Value;

use super::theme::Theme;
use crate::error::CliError;
use arbor_tools::files::{read_bounded, FileKind};

/// The style names a theme file may set, as written in the file.
const STYLES: &[&str] = &[
    "text",
    "dim",
    "accent",
    "user",
    "assistant",
    "thinking",
    "tool",
    "toolError",
    "error",
    "warning",
    "success",
    "diffAdded",
    "diffRemoved",
    "code",
    "heading",
    "link",
    "marker",
    "label",
    "selected",
    "border",
];

/// The theme for this run from `--theme` (relative files against `cwd`) and `NO_COLOR`.
pub fn load(arg: Option<&str>, cwd: &Path) -> Result<Theme, CliError> {
    let env = Theme::from_env();
    match arg.map(str::trim) {
        None | Some("default" | "dark") => Ok(env),
        Some("mono" | "monochrome" | "none") => Ok(Theme::monochrome()),
        Some(file) => {
            let path = arbor_tools::path::resolve(file, cwd);
            let theme = from_file(&path)?;
            Ok(if env.color { theme } else { env })
        }
    }
}

fn from_file(path: &Path) -> Result<Theme, CliError> {
    let bad = |why: String| CliError::Config(format!("theme file {}: {why}", path.display()));
    let Some(bytes) = read_bounded(path, FileKind::THEME)? else {
        return Err(bad("not found".into()));
    };
    let json: Value = serde_json::from_str(&bytes.text()).map_err(|e| bad(e.to_string()))?;
    let Some(colors) = json.get("colors").and_then(Value::as_object) else {
        return Err(bad(
            "expected an object {\"colors\": {\"accent\": \"#5fd7ff\", …}}".into(),
        ));
    };
    let mut t = Theme::colored();
    for (name, value) in colors {
        let color = parse_color(value).ok_or_else(|| {
            bad(format!(
                "colors.{name}: {value} is not a colour (\"#rrggbb\", 0-255, or a name such as \"cyan\")"
            ))
        })?;
        let style: &mut Style = match name.as_str() {
            "text" => &mut t.text,
            "dim" => &mut t.dim,
            "accent" => &mut t.accent,
            "user" => &mut t.user,
            "assistant" => &mut t.assistant,
            "thinking" => &mut t.thinking,
            "tool" => &mut t.tool,
            "toolError" => &mut t.tool_error,
            "error" => &mut t.error,
            "warning" => &mut t.warning,
            "success" => &mut t.success,
            "diffAdded" => &mut t.diff_added,
            "diffRemoved" => &mut t.diff_removed,
            "code" => &mut t.code,
            "heading" => &mut t.heading,
            "link" => &mut t.link,
            "marker" => &mut t.marker,
            "label" => &mut t.label,
            "selected" => &mut t.selected,
            "border" => &mut t.border,
            other => {
                return Err(bad(format!(
                    "colors.{other}: no such style (styles: {})",
                    STYLES.join(", ")
                )))
            }
        };
        *style = style.fg(color);
    }
    Ok(t)
}

fn parse_color(v: &Value) -> Option<Color> {
    if let Some(n) = v.as_u64() {
        return u8::try_from(n).ok().map(Color::Indexed);
    }
    let s = v.as_str()?.trim();
    if let Some(hex) = s.strip_prefix('#') {
        if hex.len() != 6 {
            return None;
        }
        let n = u32::from_str_radix(hex, 16).ok()?;
        let [_, r, g, b] = n.to_be_bytes();
        return Some(Color::Rgb(r, g, b));
    }
    // ratatui's names ("red", "lightblue", "darkgray", …); numbers are taken above.
    s.parse::<Color>()
        .ok()
        .filter(|c| !matches!(c, Color::Indexed(_) | Color::Rgb(..)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_files_and_their_errors() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(Some("mono"), dir.path()).unwrap(), Theme::monochrome());
        std::fs::write(
            dir.path().join("t.json"),
            r##"{"colors": {"accent": "#5fd7ff", "dim": 244, "user": "lightblue"}}"##,
        )
        .unwrap();
        let t = from_file(&dir.path().join("t.json")).unwrap();
        assert_eq!(t.accent.fg, Some(Color::Rgb(0x5f, 0xd7, 0xff)));
        assert_eq!(t.dim.fg, Some(Color::Indexed(244)));
        assert_eq!(t.user.fg, Some(Color::LightBlue));
        assert_eq!(t.user.add_modifier, Theme::colored().user.add_modifier);
        for (body, says) in [
            (
                r#"{"colors": {"acent": "red"}}"#,
                "colors.acent: no such style",
            ),
            (
                r##"{"colors": {"accent": "#12"}}"##,
                "colors.accent: \"#12\" is not a colour",
            ),
            (r#"{"accent": "red"}"#, "expected an object"),
            ("{", "EOF"),
        ] {
            std::fs::write(dir.path().join("bad.json"), body).unwrap();
            let e = load(Some("bad.json"), dir.path()).unwrap_err().to_string();
            assert!(e.starts_with("theme file "), "{e}");
            assert!(e.contains("bad.json: "), "{e}");
            assert!(e.contains(says), "{e}");
        }
        let e = load(Some("nope.json"), dir.path()).unwrap_err().to_string();
        assert!(e.contains("nope.json"), "{e}");
    }
}
