// Some webviews report the POSIX locale itself as the language: WebKitGTK
// under LANG=C gives navigator.language "C", which Intl rejects with a
// RangeError. uPlot builds an Intl.NumberFormat from navigator.language when
// its module loads, so such a machine showed a blank window. This module is
// imported first (see main.ts) and swaps an unusable tag for "en-US" before
// any library reads it.

export function usableLanguage(tag: string | undefined): string {
  if (!tag) return "en-US";
  try {
    new Intl.NumberFormat(tag);
    return tag;
  } catch {
    return "en-US";
  }
}

if (typeof navigator !== "undefined") {
  const fixed = usableLanguage(navigator.language);
  if (fixed !== navigator.language) {
    Object.defineProperty(navigator, "language", { get: () => fixed, configurable: true });
    Object.defineProperty(navigator, "languages", { get: () => [fixed], configurable: true });
  }
}
