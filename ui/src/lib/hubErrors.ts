// Hub failures in plain words. The backend's message is written for the CLI
// (it names the endpoint, the error chain, HF_TOKEN and --endpoint); a person
// in the app first needs to know what happened and what to press, so the
// message becomes a sentence and an action, and the original stays available
// as the details.

import type { ApiError } from "../types";

export interface PlainError {
  /** What happened, in one sentence. */
  title: string;
  /** What to do about it. */
  advice: string;
  /** Whether trying again can help (network trouble, a busy server). */
  retry: boolean;
  /** Whether the fix is in Settings (a token, or a mirror's address). */
  settings?: boolean;
  /** The backend's own message, for the curious and for bug reports. */
  detail: string;
}

/**
 * The same, said on the Settings page itself: the fix is in the fields
 * above, so the advice points there and no "Open Settings" is offered.
 */
export function plainHubErrorInSettings(e: ApiError): PlainError {
  const p = plainHubError(e);
  return {
    ...p,
    title: p.title.replace("could not reach Hugging Face", "could not reach the hub (Hugging Face, or the mirror set above)"),
    advice: p.advice.replace(/\bin Settings\b/g, "above"),
    settings: false,
  };
}

export function plainHubError(e: ApiError): PlainError {
  const m = e.message;
  const detail = m;
  if (/interrupted|resume/i.test(m)) {
    return {
      title: "The download was interrupted.",
      advice: "What arrived is kept and checked; try again to continue from there.",
      retry: true,
      detail,
    };
  }
  if (e.code === "network" || /could not reach|timed out|connection/i.test(m)) {
    return {
      title: "Dyno could not reach Hugging Face.",
      advice: "Check that this computer is online, then try again. If your network uses a mirror, set its address in Settings.",
      retry: true,
      settings: true,
      detail,
    };
  }
  if (/\bis gated\b/i.test(m)) {
    return {
      title: "This repo is gated: its authors ask you to accept their terms first.",
      advice:
        "Accept them on the repo's page on huggingface.co, then save an access token of that account in Settings and try again.",
      retry: true,
      settings: true,
      detail,
    };
  }
  if (/needs a login|refused the token/i.test(m)) {
    return {
      title: "Hugging Face asked for a login for this repo.",
      advice: "It may be private or misspelled. Check the name, or save an access token in Settings and try again.",
      retry: true,
      settings: true,
      detail,
    };
  }
  if (e.code === "not_found") {
    return {
      title: "Hugging Face has no such repo or file.",
      advice: "Check the spelling, or search again.",
      retry: false,
      detail,
    };
  }
  if (/disk|space|No space/i.test(m)) {
    return { title: "The disk is full.", advice: "Free some space, then try again: what arrived is kept.", retry: true, detail };
  }
  if (e.code === "cancelled") {
    return { title: "Cancelled.", advice: "What arrived is kept; downloading again resumes it.", retry: true, detail };
  }
  return { title: "The hub request failed.", advice: "Try again; if it keeps failing, the details below say why.", retry: true, detail };
}
