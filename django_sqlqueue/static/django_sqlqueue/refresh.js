// Updates a page's figures in place (admin/refresh.py): every few seconds, while the tab
// is visible, it asks the page's own URL for its fragment and puts each figure that
// changed in its place. The figures are the elements marked data-sqlqueue-refresh, the
// cells of the job list's rows and the values of a job's fields; a row no longer in the
// list is greyed. It stops, and says so, when an update fails or the page says it is no
// longer live (a job that ended).
"use strict";
(function () {
  const note = document.getElementById("sqlqueue-refresh");
  if (!note) return;
  const every = Number(note.dataset.every);
  let timer = null;
  let stopped = false;
  let busy = false;

  function figures(root) {
    const found = new Map();
    root.querySelectorAll("[data-sqlqueue-refresh]").forEach((el) => found.set("mark " + el.dataset.sqlqueueRefresh, el));
    root.querySelectorAll("#result_list tbody tr").forEach((row) => {
      const id = row.querySelector("th");
      if (!id) return;
      row.querySelectorAll("td[class*='field-']").forEach((cell) => found.set(`row ${id.textContent.trim()} ${cell.className}`, cell));
    });
    root.querySelectorAll(".form-row .readonly").forEach((cell) => found.set("field " + cell.closest(".form-row").className, cell));
    return found;
  }

  function stop(text) {
    stopped = true;
    clearTimeout(timer);
    note.textContent = text;
    note.classList.add("sqlqueue-refresh-stopped");
  }

  async function update() {
    timer = null;
    if (stopped || busy || document.hidden) return;
    busy = true;
    try {
      const response = await fetch(window.location.href, {
        headers: { "X-SQLQueue-Refresh": "1" },
        credentials: "same-origin",
        cache: "no-store",
        redirect: "manual",
      });
      if (!response.ok) throw new Error(response.status ? `the server answered ${response.status}` : "you may have been signed out");
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      const now = figures(document);
      const found = figures(fresh);
      found.forEach((el, key) => {
        const old = now.get(key);
        if (old && old.innerHTML !== el.innerHTML) old.innerHTML = el.innerHTML;
      });
      now.forEach((el, key) => {
        const row = key.startsWith("row ") && el.closest("tr");
        if (row && !found.has(key) && !row.classList.contains("sqlqueue-gone")) {
          row.classList.add("sqlqueue-gone");
          row.title = "No longer in this list: reload the page to see it as it is.";
        }
      });
      const live = fresh.getElementById("sqlqueue-refresh");
      if (!live) return stop("Figures no longer update: this job is no longer running. Reload the page to see what you can do with it now.");
      note.dataset.updated = Number(note.dataset.updated || 0) + 1;
    } catch (error) {
      return stop(`Figures stopped updating (${error.message}). Reload the page to try again.`);
    } finally {
      busy = false;
    }
    schedule();
  }

  function schedule() {
    if (!stopped && !document.hidden && timer === null) timer = setTimeout(update, every);
  }

  document.addEventListener("visibilitychange", () => {
    if (document.hidden) {
      clearTimeout(timer);
      timer = null;
    } else if (!stopped) {
      update();
    }
  });
  note.hidden = false;
  note.textContent = `Figures update every ${every / 1000} s while this tab is visible.`;
  schedule();
})();
