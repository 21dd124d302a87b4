//! Keeping private details out of exports. Every export is made from the
//! document after [`scrub`] has run over it: no file paths, user names or
//! host names leave the machine unless the user opts in, and models are
//! named by file name and sha256.

use serde_json::{json, Value};

/// What [`scrub`] removes: the home directory, the user name and the host
/// name of this machine, and directories in front of file names.
#[derive(Debug, Clone, Default)]
pub struct Private {
    pub home: Option<String>,
    pub user: Option<String>,
    pub host: Option<String>,
}

impl Private {
    pub fn here() -> Private {
        let non_empty = |s: Option<String>| s.filter(|s| s.len() >= 2);
        Private {
            home: non_empty(
                directories::BaseDirs::new().map(|d| d.home_dir().display().to_string()),
            ),
            user: non_empty(
                std::env::var("USER")
                    .or_else(|_| std::env::var("USERNAME"))
                    .ok(),
            ),
            host: non_empty(sysinfo::System::host_name()),
        }
    }

    fn text(&self, s: &str) -> String {
        let mut out = strip_dirs(s);
        if let Some(h) = &self.home {
            out = out.replace(h.as_str(), "~");
        }
        if let Some(u) = &self.user {
            out = replace_word(&out, u, "<user>");
        }
        if let Some(h) = &self.host {
            out = replace_word(&out, h, "<host>");
        }
        out
    }
}

/// Keys whose string values are file system paths in Dyno's documents:
/// `model.path`, a level's `path`, and a sweep spec's `source` (`files`,
/// `dir`, `from`) or a bench's `models`. They keep only their last part,
/// whatever the path looks like, since a relative path names folders too.
const PATH_KEYS: [&str; 5] = ["path", "files", "dir", "from", "models"];

/// The last part of a Unix or Windows path: a file's name, or a folder's
/// own name when the path ends in a separator.
fn last_part(p: &str) -> &str {
    p.trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("")
}

/// Characters that end a path in running text. Spaces do not: folder names
/// hold them ("LLM Models"), so a path goes on while separators follow.
fn ends_path(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\t'
            | '"'
            | '\''
            | '`'
            | '('
            | ')'
            | '['
            | ']'
            | '{'
            | '}'
            | '<'
            | '>'
            | '|'
            | ';'
            | ','
    )
}

/// Where a path may begin: at the start, or after a space or an opening
/// delimiter ("'/x'", "(/x", "--db=/x"), never inside a word ("t/s", "2048/512",
/// "owner/repo") or after "https:".
fn may_start(prev: Option<char>) -> bool {
    prev.is_none_or(|c| c.is_whitespace() || ends_path(c) || c == '=')
}

/// Length of the absolute-path prefix at `i`, if one starts there: "/x",
/// "~/", "C:\\" or "C:/", or a UNC "\\\\server".
fn path_start(c: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| c.get(i + k).copied();
    if !may_start(i.checked_sub(1).map(|p| c[p])) {
        return None;
    }
    match (at(0)?, at(1), at(2)) {
        ('/', Some(n), _) if !n.is_whitespace() => Some(1),
        ('~', Some('/'), _) => Some(2),
        ('\\', Some('\\'), _) => Some(2),
        (d, Some(':'), Some('\\' | '/')) if d.is_ascii_alphabetic() => Some(3),
        _ => None,
    }
}

/// Cut the folders off every absolute path in free text (an error message,
/// a spec), Unix and Windows alike, keeping the file name and the words
/// around it: "cannot read /data/LLM Models/x.gguf: gone" becomes "cannot
/// read x.gguf: gone". A path runs over spaces to its last separator, and
/// stops at a character that cannot be part of it, at ": " and at a
/// separator after a space (where the next path begins).
fn strip_dirs(s: &str) -> String {
    let c: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < c.len() {
        let Some(start) = path_start(&c, i) else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        let mut last_sep = i + start - 1;
        let mut k = i + start;
        while k < c.len() {
            let ch = c[k];
            let next = c.get(k + 1).copied();
            if ends_path(ch) || (ch == ':' && next.is_none_or(char::is_whitespace)) {
                break;
            }
            if ch == '/' || ch == '\\' {
                if c[k - 1].is_whitespace() {
                    break;
                }
                last_sep = k;
            }
            k += 1;
        }
        i = last_sep + 1;
    }
    out
}

/// Replace `word` where it stands as a word of its own, so a user called
/// "ai" does not mangle "failed".
fn replace_word(s: &str, word: &str, with: &str) -> String {
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(word) {
        let before = if i > 0 {
            rest[..i].chars().last()
        } else {
            out.chars().last()
        };
        let after = rest[i + word.len()..].chars().next();
        out.push_str(&rest[..i]);
        if is_word(before) || is_word(after) {
            out.push_str(word);
        } else {
            out.push_str(with);
        }
        rest = &rest[i + word.len()..];
    }
    out.push_str(rest);
    out
}

/// Remove private details from every string of a document: path fields
/// keep their last part, and free text loses the folders of any path in it.
pub fn scrub(v: &mut Value, p: &Private) {
    match v {
        Value::String(s) => *s = p.text(s),
        Value::Array(a) => a.iter_mut().for_each(|x| scrub(x, p)),
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if PATH_KEYS.contains(&k.as_str()) {
                    to_last_part(x);
                }
                scrub(x, p);
            }
        }
        _ => {}
    }
}

/// A path field (a string, or a list of them) as its last parts.
fn to_last_part(v: &mut Value) {
    match v {
        Value::String(s) => *s = last_part(s).to_string(),
        Value::Array(a) => a.iter_mut().for_each(to_last_part),
        _ => {}
    }
}

/// The document as JSON, scrubbed unless `include_host`, with a header
/// saying what it is.
pub fn document<T: serde::Serialize>(doc: &T, include_host: bool, p: &Private) -> Value {
    let mut v = serde_json::to_value(doc).expect("reports serialise");
    if !include_host {
        scrub(&mut v, p);
    }
    if let Value::Object(o) = &mut v {
        o.insert(
            "exported_by".into(),
            json!(format!("dyno {}", env!("CARGO_PKG_VERSION"))),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubbing_removes_paths_user_and_host() {
        let p = Private {
            home: Some("/home/zelda".into()),
            user: Some("zelda".into()),
            host: Some("castle-7".into()),
        };
        let mut v = json!({
            "path": "/home/zelda/models/m.gguf",
            "win": "C:\\Users\\zelda\\m.gguf",
            "error": "cannot read /home/zelda/x on castle-7 as zelda",
            "n": 3,
            "list": ["/opt/a/b.gguf", "plain"]
        });
        scrub(&mut v, &p);
        let s = v.to_string();
        assert!(!s.contains("zelda") && !s.contains("castle-7"), "{s}");
        assert_eq!(v["path"], "m.gguf");
        assert_eq!(v["win"], "m.gguf");
        assert_eq!(v["list"][0], "b.gguf");
        assert_eq!(v["list"][1], "plain");
        assert_eq!(v["n"], 3);
        assert_eq!(
            replace_word("failed as ai", "ai", "<user>"),
            "failed as <user>"
        );
    }

    #[test]
    fn free_text_keeps_only_the_file_names_of_paths_with_spaces() {
        let p = Private::default();
        let cases = [
            (
                "cannot read /data/LLM Models/smol copy.gguf: permission denied",
                "cannot read smol copy.gguf: permission denied",
            ),
            ("/data/LLM Models/x.gguf", "x.gguf"),
            (
                "cannot open C:\\Users\\x\\a b\\m.gguf (access denied)",
                "cannot open m.gguf (access denied)",
            ),
            (
                "copy \\\\server\\share\\LLM Models\\m.gguf failed",
                "copy m.gguf failed",
            ),
            (
                "load 'D:/My Models/q 4.gguf' and '/opt/other dir/b.gguf'",
                "load 'q 4.gguf' and 'b.gguf'",
            ),
            ("--db=/srv/my data/dyno.db", "--db=dyno.db"),
            ("see ~/LLM Models/m.gguf", "see m.gguf"),
            // What is not a path stays as it was.
            (
                "batch 2048/512, 12 t/s, 1 / 2, https://huggingface.co/a/b",
                "batch 2048/512, 12 t/s, 1 / 2, https://huggingface.co/a/b",
            ),
            ("bartowski/Llama-3-GGUF", "bartowski/Llama-3-GGUF"),
        ];
        for (raw, want) in cases {
            assert_eq!(p.text(raw), want, "{raw}");
        }
    }

    #[test]
    fn typed_path_fields_become_file_names() {
        let mut v = json!({
            "model": { "path": "models/LLM Models/smol copy.gguf", "file_name": "smol copy.gguf" },
            "levels": [ { "path": "C:\\Users\\x\\a b\\m.gguf" }, { "path": null } ],
            "spec": {
                "source": { "files": ["/data/LLM Models/a.gguf", "rel dir/b.gguf"] },
                "models": ["/data/LLM Models/c.gguf"]
            },
            "dir_spec": { "source": { "dir": "/data/LLM Models/" } },
            "from_spec": { "source": { "from": "\\\\server\\share\\m.gguf" } },
            "repo_spec": { "source": { "repo": "bartowski/Llama-3-GGUF" } }
        });
        scrub(&mut v, &Private::default());
        assert_eq!(v["model"]["path"], "smol copy.gguf");
        assert_eq!(v["levels"][0]["path"], "m.gguf");
        assert_eq!(v["levels"][1]["path"], json!(null));
        assert_eq!(v["spec"]["source"]["files"], json!(["a.gguf", "b.gguf"]));
        assert_eq!(v["spec"]["models"], json!(["c.gguf"]));
        assert_eq!(v["dir_spec"]["source"]["dir"], "LLM Models");
        assert_eq!(v["from_spec"]["source"]["from"], "m.gguf");
        assert_eq!(v["repo_spec"]["source"]["repo"], "bartowski/Llama-3-GGUF");
    }
}
