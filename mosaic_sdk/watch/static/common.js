// Shared by the pages of mosaic watch. Everything a worker wrote is set with textContent
// only, never parsed as markup, so it is shown as text, whatever it contains.
"use strict";

const watch = {
  // The token from the URL mosaic watch printed (?token=...), kept for this tab.
  token() {
    const fromUrl = new URLSearchParams(location.search).get("token");
    if (fromUrl) sessionStorage.setItem("mosaicWatchToken", fromUrl);
    return fromUrl || sessionStorage.getItem("mosaicWatchToken") || "";
  },

  // GET or POST JSON (with `binary`, an ok answer's bytes as an ArrayBuffer); resolves to
  // {ok, status, data} and never throws.
  async api(path, options, binary) {
    const opts = Object.assign({ headers: {} }, options || {});
    const token = watch.token();
    if (token) opts.headers["X-Mosaic-Token"] = token;
    try {
      const response = await fetch(path, opts);
      if (binary && response.ok) return { ok: true, status: response.status, data: await response.arrayBuffer() };
      let data = null;
      try { data = await response.json(); } catch (e) { data = { error: await response.text() }; }
      return { ok: response.ok, status: response.status, data: data || {} };
    } catch (e) {
      return { ok: false, status: 0, data: { error: "mosaic watch is not answering (" + e + "); is it still running?" } };
    }
  },

  // An element with text content and attributes (attribute values are never parsed as HTML).
  el(tag, text, attrs) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    return node;
  },

  show(id, text) {
    const node = document.getElementById(id);
    node.textContent = text || "";
    node.hidden = !text;
  },

  num(value, digits) {
    if (value === null || value === undefined) return "-";
    return Number(value).toFixed(digits === undefined ? 2 : digits);
  },

  duration(seconds) {
    if (seconds === null || seconds === undefined) return "-";
    const s = Math.round(seconds);
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
    return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  },

  // `url` with this tab's token (a link to another page of mosaic watch).
  withToken(url) {
    const token = watch.token();
    return token ? url + "?token=" + encodeURIComponent(token) : url;
  },

  runUrl(runId) {
    return "/runs/" + encodeURIComponent(runId);
  },

  apiUrl(runId, what) {
    return "/api/runs/" + encodeURIComponent(runId) + (what ? "/" + what : "");
  },

  colors: ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"],
};
