// A game page under way follows the game: every few seconds, while the page is in view,
// it asks this server whether the page changed (its ETag: answered 304 Not Modified at
// almost no cost when nothing did), and shows the new state as soon as something did,
// the reader's next decision included. A reader who has begun filling in a form is not
// interrupted: a notice offers the new state instead. Without scripts, the page is as it
// was rendered.
(function () {
  "use strict";
  var box = document.getElementById("live");
  if (!box || !window.fetch) {
    return;
  }
  var EVERY = Math.max(parseInt(box.getAttribute("data-every"), 10) || 5000, 200);
  var LONGEST = 60000;
  var etag = box.getAttribute("data-etag"), wait = EVERY, timer = null, done = false;
  var touched = false;

  function show() {
    done = true;
    if (box.getAttribute("data-reload")) {
      location.reload();  // the same address, where the reader was on it
    } else {
      location.replace(box.getAttribute("data-page"));  // a page after a form: its notice was for then
    }
  }

  function moved() {
    done = true;
    if (touched) {
      box.hidden = false;  // the reader's half-filled form stays until they choose
    } else {
      show();
    }
  }

  function later(ms) {
    clearTimeout(timer);
    if (!done && !document.hidden) {
      present();
      timer = setTimeout(ask, ms);
    }
  }

  function ask() {
    fetch(box.getAttribute("data-page") + location.search, {
      headers: etag ? {"If-None-Match": '"' + etag + '"'} : {},
      cache: "no-store",
      credentials: "same-origin"
    }).then(function (resp) {
      if (resp.status === 304) {
        wait = EVERY;
      } else if (resp.ok) {
        moved();
      } else if (resp.status === 404 || resp.status === 410) {
        done = true;  // the link no longer opens this game: the page stays as it is
      } else {
        wait = Math.min(wait * 2, LONGEST);
      }
    }).catch(function () {
      wait = Math.min(wait * 2, LONGEST);  // offline for a while: ask less often
    }).then(function () {
      later(wait);
    });
  }

  // A seat's own page says it is open and in view, so that the server holds back the
  // email of a decision this page will show by itself.
  var here = box.getAttribute("data-here"), heard = 0;
  var HERE_EVERY = Math.max(parseInt(box.getAttribute("data-here-every"), 10) || 60000, 1000);

  function present() {
    if (!here || done || document.hidden || Date.now() - heard < HERE_EVERY) {
      return;
    }
    heard = Date.now();
    var form = new FormData();
    form.append("sig", box.getAttribute("data-sig"));
    fetch(here, {method: "POST", body: form, credentials: "same-origin"})
      .catch(function () { heard = 0; });  // try again at the next question
  }

  document.addEventListener("input", function () { touched = true; });
  document.addEventListener("change", function () { touched = true; });
  box.querySelector("button").addEventListener("click", show);
  document.addEventListener("visibilitychange", function () {
    later(document.hidden ? EVERY : 0);  // back in view: ask at once
  });
  later(EVERY);
})();
