// What each term on the screen means, in a sentence a newcomer can read.
// The app shows these as tooltips wherever the term appears (Term.svelte),
// so "ngl", "KLD p99" or "bpw" never stand unexplained.

export const GLOSSARY = {
  prefill:
    "Prefill (prompt processing, pp): how fast the model reads the prompt, in tokens per second. It sets how long you wait before the reply starts.",
  decode:
    "Decode (text generation, tg): how fast the model writes its reply, one token after another, in tokens per second. It is usually limited by memory bandwidth.",
  pp: "pp N: a prefill test of an N-token prompt.",
  tg: "tg N: a decode test generating N tokens.",
  pptg: "pp N + tg M: a prompt of N tokens, then M generated tokens, timed per phase; it gives the time to first token.",
  ttft: "Time to first token: the wait from sending a prompt to the first token of the reply (prefill plus one decode step). A latency in ms, not a speed.",
  ts: "Tokens per second. A token is a word piece: English text averages about 1.3 tokens per word.",
  ngl: "GPU layers (ngl): how many of the model's layers run on the GPU; the rest run on the CPU. 'auto' puts all of them on a GPU when there is one.",
  threads: "CPU threads llama.cpp uses. Dyno's default is one per physical core.",
  batch: "Batch sizes: the logical batch (tokens per llama.cpp call) / the physical micro-batch (ub) the hardware processes at once. They change prefill speed.",
  ub: "ub (micro-batch): tokens the hardware processes at once within a batch.",
  fa: "Flash attention: a faster attention kernel; 'auto' lets llama.cpp choose.",
  kv: "KV cache type: how the attention cache is stored (f16, or quantised q8_0/q4_0 to save memory at some quality cost).",
  mmap: "mmap: map the model file into memory instead of reading it in; 'auto' lets llama.cpp choose. It changes load time and memory use, rarely speed.",
  quant: "Quantisation level (Q8_0, Q4_K_M, …): how many bits each weight is stored in. Fewer bits: a smaller, faster model, with some loss of quality.",
  bpw: "Bits per weight: the model's size in bits divided by its parameter count (F16 is 16; Q4_K_M about 4.9).",
  ppl: "Perplexity (PPL): how surprised the model is by real text; lower is better. Compare it only between levels of the same model on the same text.",
  kld: "KL divergence (KLD): how far this level's predictions drift from the most precise level's, on the same text. 0 means identical; lower is better.",
  kldp99: "KLD p99: the KL divergence of the worst 1% of tokens: where quantisation hurts most.",
  top1: "Top-1 agreement: how often this level picks the same most-likely next token as the most precise level.",
  ci: "95% confidence interval of the mean: the range the true mean most likely lies in, from the spread of the repetitions. Fewer than 3 repetitions make it very wide.",
  p: "p-value of Welch's t-test on the repetitions (adjusted with Holm's method when several tests are compared): below 0.05 the difference is unlikely to be noise.",
  disturbed:
    "Disturbed: while this test was timed, other programs used more than a tenth of the cores it ran on, the hypervisor took CPU time away (steal), or its repetitions spread more than a quiet machine's do. The figure is kept but is not this machine's clean speed.",
  roofline: "Roofline: decode speed × model weight bytes, as a share of the measured memory bandwidth; how close decode comes to the hardware's limit.",
  reps: "Repetitions: how often each test is timed after an untimed warm-up. More repetitions give a narrower confidence interval.",
  load: "Model load time: reading the model and setting up llama.cpp, measured on its own and never part of a tokens-per-second figure.",
} as const;

export type TermKey = keyof typeof GLOSSARY;
