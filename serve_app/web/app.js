// The try-it page: a file or URL in, an async job polled to the end, the transcript shown with speaker
// colours and timestamps that seek the player, and downloads made from the result's segments.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY_STORAGE = "stt-api-key";
const SPEAKER_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
let chosenFile = null;
let result = null;

function apiKey() {
  return $("api-key").value.trim();
}

function setStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

async function detailOf(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    return body.detail.map((e) => `${e.loc.join(".")}: ${e.msg}`).join("; ");
  } catch {
    return `${response.status} ${response.statusText}`;
  }
}

async function api(path, options = {}) {
  const headers = { Authorization: `Bearer ${apiKey()}` };
  const response = await fetch(path, { ...options, headers });
  if (!response.ok) throw new Error(await detailOf(response));
  return response.json();
}

function chooseFile(file) {
  chosenFile = file;
  $("file-name").textContent = file ? file.name : "";
  if (file) $("url").value = "";
}

function requestForm() {
  const form = new FormData();
  if (chosenFile) form.append("file", chosenFile, chosenFile.name);
  else form.append("url", $("url").value.trim());
  form.append("response_format", "verbose_json");
  form.append("timestamp_granularities[]", "segment");
  if ($("diarize").checked) form.append("task", "diarize");
  const language = $("language").value.trim();
  if (language) form.append("language", language);
  return form;
}

async function transcribe() {
  if (!apiKey()) return setStatus("Type your API key first.", true);
  if (!chosenFile && !$("url").value.trim()) return setStatus("Choose a file or paste a URL.", true);
  $("transcribe").disabled = true;
  $("progress").hidden = false;
  $("progress").value = 0;
  try {
    setStatus("Uploading…");
    const created = await api("/v1/audio/transcriptions/async", { method: "POST", body: requestForm() });
    setStatus("Transcribing…");
    let job = created;
    while (job.status === "in_progress") {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      job = await api(`/v1/audio/transcriptions/async/${created.job_id}`);
      $("progress").value = job.progress;
    }
    if (job.status === "error") throw new Error(job.error);
    result = job.result;
    show(result);
    setStatus(`Done: ${result.duration.toFixed(1)} s of audio, language ${result.language}.`);
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    $("transcribe").disabled = false;
    $("progress").hidden = true;
  }
}

function clock(seconds, separator = ".") {
  const ms = Math.round(seconds * 1000);
  const pad = (n, width = 2) => String(n).padStart(width, "0");
  const h = Math.floor(ms / 3600000), m = Math.floor(ms / 60000) % 60, s = Math.floor(ms / 1000) % 60;
  return `${pad(h)}:${pad(m)}:${pad(s)}${separator}${pad(ms % 1000, 3)}`;
}

function show(transcript) {
  const player = $("player");
  player.src = chosenFile ? URL.createObjectURL(chosenFile) : $("url").value.trim();
  const speakers = (transcript.speakers || []).map((s) => s.id ?? s.speaker ?? s);
  const container = $("transcript");
  container.replaceChildren();
  for (const segment of transcript.segments) {
    const row = document.createElement("p");
    row.className = "segment";
    const time = document.createElement("button");
    time.className = "time";
    time.textContent = clock(segment.start).slice(0, 8);
    time.dataset.start = segment.start;
    time.addEventListener("click", () => {
      player.currentTime = segment.start;
      player.play().catch(() => {});
    });
    row.append(time);
    if (segment.speaker !== undefined) {
      const label = document.createElement("span");
      label.className = "speaker";
      let index = speakers.indexOf(segment.speaker);
      if (index < 0) index = speakers.push(segment.speaker) - 1;
      label.style.background = SPEAKER_COLOURS[index % SPEAKER_COLOURS.length];
      label.textContent = segment.speaker;
      row.append(label);
    }
    row.append(document.createTextNode(segment.text.trim()));
    container.append(row);
  }
  $("output").hidden = false;
}

function rendered(format) {
  const cues = result.segments.map((s) => ({ ...s, text: (s.speaker ? `[${s.speaker}] ` : "") + s.text.trim() }));
  if (format === "json") return JSON.stringify(result, null, 2);
  if (format === "txt") return cues.map((c) => c.text).join("\n") + "\n";
  if (format === "srt") {
    return cues.map((c, i) => `${i + 1}\n${clock(c.start, ",")} --> ${clock(c.end, ",")}\n${c.text}\n`).join("\n");
  }
  return "WEBVTT\n\n" + cues.map((c) => `${clock(c.start)} --> ${clock(c.end)}\n${c.text}\n`).join("\n");
}

function download() {
  const format = $("format").value;
  const base = chosenFile ? chosenFile.name.replace(/\.[^.]+$/, "") : "transcript";
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([rendered(format)], { type: "text/plain;charset=utf-8" }));
  link.download = `${base}.${format}`;
  link.click();
}

document.addEventListener("DOMContentLoaded", () => {
  $("api-key").value = sessionStorage.getItem(KEY_STORAGE) || "";
  $("api-key").addEventListener("input", () => sessionStorage.setItem(KEY_STORAGE, apiKey()));
  $("file").addEventListener("change", (event) => chooseFile(event.target.files[0] || null));
  $("url").addEventListener("input", () => $("url").value && chooseFile(null));
  const drop = $("drop");
  drop.addEventListener("dragover", (event) => { event.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    chooseFile(event.dataTransfer.files[0] || null);
  });
  $("transcribe").addEventListener("click", transcribe);
  $("download").addEventListener("click", download);
});
