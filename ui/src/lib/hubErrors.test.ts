import { describe, expect, it } from "vitest";
import { plainHubError, plainHubErrorInSettings } from "./hubErrors";

describe("plainHubError", () => {
  it("turns a connection failure into a sentence with Retry, keeping the detail", () => {
    const raw =
      "network error: could not reach https://huggingface.co (error sending request for url (https://huggingface.co/api/models?search=x): client error (Connect)); check the connection, or set HF_ENDPOINT (or --endpoint) for a mirror";
    const p = plainHubError({ code: "network", message: raw });
    expect(p.title).toBe("Dyno could not reach Hugging Face.");
    expect(p.title + p.advice).not.toMatch(/https?:|HF_ENDPOINT|--endpoint/);
    expect(p.retry).toBe(true);
    expect(p.detail).toBe(raw);
  });

  it("says what a gated repo wants, without environment variables", () => {
    const p = plainHubError({
      code: "bad_input",
      message: "repo meta/x is gated; accept its terms on huggingface.co, then give a token with HF_TOKEN=hf_…",
    });
    expect(p.title).toMatch(/gated/);
    expect(p.advice).not.toMatch(/HF_TOKEN|hf auth|`/);
    expect(p.advice).toMatch(/Settings/);
    expect(p.settings).toBe(true);
  });

  it("sends a refused login to Settings, where the token is saved", () => {
    const p = plainHubError({
      code: "bad_input",
      message: "repo a/b needs a login (private, gated or not there); give a token with HF_TOKEN=hf_… or $HF_HOME/token",
    });
    expect(p.settings).toBe(true);
    expect(p.advice).toMatch(/token in Settings/);
  });

  it("says a cut download was interrupted and continues, not that the hub is unreachable", () => {
    const p = plainHubError({
      code: "network",
      message:
        "network error: o/r/m.gguf: the download was interrupted after 25000000 of 98362432 bytes (error decoding response body); run the same command again to resume",
    });
    expect(p.title).toBe("The download was interrupted.");
    expect(p.advice).toMatch(/continue/);
    expect(p.retry).toBe(true);
  });

  it("does not offer Retry for a repo that is not there", () => {
    const p = plainHubError({ code: "not_found", message: "repo a/b was not found on the hub; check the name" });
    expect(p.retry).toBe(false);
    expect(p.advice).toMatch(/spelling/);
  });

  it("on the Settings page points at the fields above, names the mirror, and offers no Open Settings", () => {
    const raw =
      "network error: could not reach http://127.0.0.1:9/ (error sending request for url (http://127.0.0.1:9/api/models?search=gguf): client error (Connect)); check the connection, or set HF_ENDPOINT (or --endpoint) for a mirror";
    const p = plainHubErrorInSettings({ code: "network", message: raw });
    expect(p.title).toBe("Dyno could not reach the hub (Hugging Face, or the mirror set above).");
    expect(p.advice).toBe("Check that this computer is online, then try again. If your network uses a mirror, set its address above.");
    expect(p.title + p.advice).not.toMatch(/https?:|HF_ENDPOINT|--endpoint/);
    expect(p.settings).toBe(false);
    expect(p.detail).toBe(raw);
  });
});
