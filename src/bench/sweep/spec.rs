//! What defines a sweep: where its levels come from, which levels, the
//! benchmark plan and the quality settings. Stored as the sweep's
//! `args_json` and hashed into its resume key.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::quality;
pub use crate::vocab::request::{QualitySettings, Source, SweepSpec};

impl Source {
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Files(_) => "files",
            Source::Dir(_) => "dir",
            Source::From(_) => "from",
            Source::Repo(_) => "repo",
            Source::Shape(_) => "shape",
        }
    }
}

impl QualitySettings {
    pub fn n_chunks(&self) -> u32 {
        quality::n_chunks(self.tokens)
    }
}

impl SweepSpec {
    /// Identity of the work on this machine: the same key means the same
    /// sweep, which is then resumed rather than started again.
    pub fn resume_key(&self, machine_fingerprint: &str) -> String {
        let mut h = Sha256::new();
        h.update(serde_json::to_vec(&self.canonical()).expect("spec serialises"));
        h.update(machine_fingerprint.as_bytes());
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The spec with absolute paths, so `./a.gguf` and `/x/a.gguf` match.
    ///
    /// Made absolute without following links: a hub cache's snapshot path
    /// (`snapshots/REV/model.Q4_K_M.gguf`) links to a blob named by its
    /// hash, and the level would otherwise be named and shown by that hash.
    pub fn canonical(&self) -> SweepSpec {
        let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let mut s = self.clone();
        s.source = match &self.source {
            Source::Files(f) => Source::Files(f.iter().map(|p| abs(p)).collect()),
            Source::Dir(d) => Source::Dir(abs(d)),
            Source::From(b) => Source::From(abs(b)),
            Source::Repo(r) => Source::Repo(r.clone()),
            Source::Shape(s) => Source::Shape(s.clone()),
        };
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::request::BenchRequest;

    #[test]
    fn the_same_spec_has_the_same_key_and_a_different_plan_another() {
        let spec = SweepSpec {
            source: Source::From("/nonexistent/base.gguf".into()),
            levels: Some(vec!["Q8_0".into()]),
            request: BenchRequest::defaults(2),
            quality: Some(QualitySettings {
                tokens: 2048,
                topk: 64,
            }),
            shape_only: false,
        };
        let k = spec.resume_key("machine-a");
        assert_eq!(k, spec.clone().resume_key("machine-a"));
        assert_ne!(k, spec.resume_key("machine-b"), "another machine");
        let mut other = spec.clone();
        other.request.reps = 3;
        assert_ne!(k, other.resume_key("machine-a"), "another plan");
        let mut no_q = spec.clone();
        no_q.quality = None;
        assert_ne!(k, no_q.resume_key("machine-a"));
        let mut shapes = spec.clone();
        shapes.shape_only = true;
        assert_ne!(
            k,
            shapes.resume_key("machine-a"),
            "shapes are not the files"
        );
        assert!(
            !serde_json::to_string(&spec).unwrap().contains("shape_only"),
            "a real sweep's stored spec, and so its key, is as before"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_file_keeps_its_own_name_when_made_absolute() {
        let dir = tempfile::tempdir().unwrap();
        let blob = dir.path().join("0f3a9c1e");
        std::fs::write(&blob, b"GGUF").unwrap();
        let link = dir.path().join("model.Q4_K_M.gguf");
        std::os::unix::fs::symlink(&blob, &link).unwrap();
        let spec = SweepSpec {
            source: Source::Files(vec![link.clone()]),
            levels: None,
            request: BenchRequest::defaults(2),
            quality: None,
            shape_only: false,
        };
        assert_eq!(spec.canonical().source, Source::Files(vec![link]));
        // A relative path still becomes absolute, so the resume key matches.
        let rel = SweepSpec {
            source: Source::From("base.gguf".into()),
            ..spec.clone()
        };
        let Source::From(p) = rel.canonical().source else {
            unreachable!()
        };
        assert!(p.is_absolute() && p.ends_with("base.gguf"), "{p:?}");
    }

    #[test]
    fn specs_round_trip_through_json_for_resume() {
        let spec = SweepSpec {
            source: Source::Files(vec!["a.gguf".into(), "b.gguf".into()]),
            levels: None,
            request: BenchRequest::defaults(4),
            quality: None,
            shape_only: false,
        };
        let back: SweepSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(back.source, spec.source);
        assert_eq!(back.request.n_threads, [4]);
    }
}
