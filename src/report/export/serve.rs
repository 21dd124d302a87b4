//! Exports of a server run (`dyno export serve:3`): its JSON document,
//! Markdown table, CSV, and its result card as PNG or SVG
//! ([`crate::report::card::serve`]). Like every export they leave out what identifies
//! the person or the machine unless `--include-host`: the server's host
//! (already `<host>` in the document) and the folders of the model path a
//! server reports (llama-server names its model by its path).

use crate::error::{DynoError, Result};
use crate::report::card;
use crate::serve::report::{self, ServeReport};
use crate::serve::stats::Percentiles;
use crate::store::Store;

use super::Format;

/// Keep a path's file name only.
fn file_name(p: &str) -> String {
    p.rsplit(['/', '\\']).next().unwrap_or(p).to_string()
}

/// The document as it may leave the machine.
pub fn scrubbed(mut r: ServeReport, include_host: bool) -> ServeReport {
    if !include_host {
        r.server.model = file_name(&r.server.model);
        r.server.models = r.server.models.iter().map(|m| file_name(m)).collect();
        r.server.model_path = r.server.model_path.as_deref().map(file_name);
    }
    r
}

/// Export server run `id` as `format` (md, csv, json, png or svg).
pub async fn export(store: &Store, id: i64, format: Format, include_host: bool) -> Result<Vec<u8>> {
    let r = scrubbed(report::load(store, id, include_host).await?, include_host);
    Ok(match format {
        Format::Json => {
            let mut v = serde_json::to_value(&r).expect("serialises");
            v["exported_by"] = serde_json::json!(format!("dyno {}", env!("CARGO_PKG_VERSION")));
            let mut s = serde_json::to_string_pretty(&v).expect("serialises");
            s.push('\n');
            s.into_bytes()
        }
        Format::Md => report::table(&r).into_bytes(),
        Format::Csv => csv(&r).into_bytes(),
        Format::Svg => card::serve_svg(&r).into_bytes(),
        Format::Png => card::png(&card::serve_svg(&r))?,
        // llama-bench's records describe in-process tests; a server's
        // requests have no fields there to go in.
        Format::LlamaBenchJson => {
            return Err(DynoError::BadInput(
                "a server run exports as md, csv, json, png or svg; llama-bench-json is for in-process runs (`dyno bench`)".into(),
            ))
        }
    })
}

fn cell(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_default()
}

fn p(v: &Option<Percentiles>, which: fn(&Percentiles) -> f64) -> String {
    cell(v.as_ref().map(which))
}

/// One row per test, every condition a column.
fn csv(r: &ServeReport) -> String {
    let quote = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = String::from(
        "run_id,server_kind,server_version,model,endpoint,api,prefix_cache,connect_tcp_ms,connect_tls_ms,test,n_prompt,n_gen,n_depth,concurrency,\
         status,requests,ok,token_source,prompt_tokens_mean,completion_tokens_mean,ttft_ms_p50,ttft_ms_p90,ttft_ms_p99,\
         itl_ms_p50,itl_ms_p99,tpot_ms_p50,e2e_ms_p50,prefill_tokens_per_s_p50,decode_tokens_per_s_p50,\
         server_prefill_tokens_per_s_p50,server_decode_tokens_per_s_p50,total_output_tokens_per_s,requests_per_s,\
         goodput_fraction,error\n",
    );
    for t in &r.results {
        let m = &t.summary;
        let source = m
            .token_source
            .and_then(|s| serde_json::to_value(s).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let row = [
            r.run_id.to_string(),
            quote(r.server.kind.label()),
            quote(r.server.version.as_deref().unwrap_or("")),
            quote(&r.server.model),
            quote(&r.endpoint),
            r.plan.api.path_for(r.server.kind).to_string(),
            r.plan.prefix_cache.to_string(),
            // What each TTFT holds of opening its connection.
            cell(r.server.connect.as_ref().map(|c| c.tcp_ms)),
            cell(r.server.connect.as_ref().and_then(|c| c.tls_ms)),
            quote(&t.test),
            t.spec.n_prompt.to_string(),
            t.spec.n_gen.to_string(),
            t.spec.n_depth.to_string(),
            t.spec.concurrency.to_string(),
            t.status.to_string(),
            m.requests.to_string(),
            m.ok.to_string(),
            source,
            cell(m.prompt_tokens_mean),
            cell(m.completion_tokens_mean),
            p(&m.ttft_ms, |x| x.p50.value),
            p(&m.ttft_ms, |x| x.p90.value),
            p(&m.ttft_ms, |x| x.p99.value),
            p(&m.itl_ms, |x| x.p50.value),
            p(&m.itl_ms, |x| x.p99.value),
            p(&m.tpot_ms, |x| x.p50.value),
            p(&m.e2e_ms, |x| x.p50.value),
            p(&m.prefill_tokens_per_s, |x| x.p50.value),
            p(&m.decode_tokens_per_s, |x| x.p50.value),
            p(&m.server_prefill_tokens_per_s, |x| x.p50.value),
            p(&m.server_decode_tokens_per_s, |x| x.p50.value),
            cell(Some(m.total_output_tokens_per_s)),
            cell(Some(m.requests_per_s)),
            cell(m.goodput.as_ref().map(|g| g.fraction)),
            quote(t.error.as_deref().unwrap_or("")),
        ];
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_paths_keep_only_their_file_name() {
        assert_eq!(file_name("/home/ana/models/a.gguf"), "a.gguf");
        assert_eq!(file_name(r"C:\Users\ana\a.gguf"), "a.gguf");
        assert_eq!(file_name("llama3.2:1b"), "llama3.2:1b");
    }
}
