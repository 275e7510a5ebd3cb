// "Notify me on this device" on a seat's game page (pages/_push.html). In a browser with
// Web Push (a secure context, a service worker, the Push API), the box offers to notify
// this device; a click asks the browser's permission, subscribes with the server's VAPID
// key, keeps this page's address for the service worker (/sw.js) to open from a
// notification (the notification itself carries no link), and posts the subscription
// to the seat's page link. "Stop notifying this device" takes this browser off the
// seat's list (its subscription stays: other games' pages may use it). Without a script,
// or without Web Push, the box shows the list of the seat's devices only.
(function () {
  "use strict";
  var box = document.getElementById("push");
  if (!box) {
    return;
  }
  var on = document.getElementById("push-on"), off = document.getElementById("push-off");
  var state = document.getElementById("push-state");
  var CACHE = "pbem-push";
  var WAIT = 20000;  // ms the browser's push service may take to subscribe
  var supported = window.isSecureContext && "serviceWorker" in navigator &&
    "PushManager" in window && "Notification" in window && "caches" in window &&
    window.crypto && window.crypto.subtle && window.TextEncoder && window.fetch;
  if (!supported) {
    return;
  }
  box.hidden = false;

  function say(what, more) {
    state.textContent = box.getAttribute("data-say-" + what) + (more ? " " + more : "");
  }

  function show(button) {
    on.hidden = button !== on;
    off.hidden = button !== off;
  }

  function hex(buffer) {
    return Array.prototype.map.call(new Uint8Array(buffer), function (b) {
      return ("0" + b.toString(16)).slice(-2);
    }).join("");
  }

  function isMine(subscription) {  // this browser is on the seat's list
    if (!subscription) {
      return Promise.resolve(false);
    }
    var mine = (box.getAttribute("data-mine") || "").split(" ");
    return crypto.subtle.digest("SHA-256", new TextEncoder().encode(subscription.endpoint))
      .then(function (digest) { return mine.indexOf(hex(digest)) >= 0; });
  }

  function key() {  // base64url -> bytes, as pushManager.subscribe wants it
    var text = box.getAttribute("data-key").replace(/-/g, "+").replace(/_/g, "/");
    var raw = atob(text + "===".slice((text.length + 3) % 4));
    var out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) {
      out[i] = raw.charCodeAt(i);
    }
    return out;
  }

  function registration() {
    return navigator.serviceWorker.register(box.getAttribute("data-worker"),
      {scope: box.getAttribute("data-scope")}).then(function () {
      return navigator.serviceWorker.ready;
    });
  }

  function current() {  // this browser's subscription, if it has one (no prompt)
    return navigator.serviceWorker.getRegistration(box.getAttribute("data-scope"))
      .then(function (reg) { return reg ? reg.pushManager.getSubscription() : null; });
  }

  function post(where, fields) {
    var form = new URLSearchParams();
    form.append("sig", box.getAttribute("data-sig"));
    Object.keys(fields).forEach(function (name) { form.append(name, fields[name]); });
    return fetch(where, {method: "POST", body: form, credentials: "same-origin",
                         redirect: "manual"}).then(function (resp) {
      if (resp.type === "opaqueredirect" || resp.ok) {
        return null;  // done: the game page says so
      }
      return resp.text().then(function (html) {  // the error page says what was wrong
        var page = new DOMParser().parseFromString(html, "text/html");
        var error = page.querySelector("#error p");
        return error ? error.textContent.trim() : String(resp.status);
      });
    });
  }

  function done(code) {
    location.assign(location.pathname + "?done=" + code);
  }

  function label() {  // "Firefox on Android": enough to tell one's devices apart
    var ua = navigator.userAgent;
    var browser = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox"
      : /Chrom(e|ium)\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "Browser";
    var system = /Android/.test(ua) ? "Android" : /iPhone|iPad/.test(ua) ? "iOS"
      : /Windows/.test(ua) ? "Windows" : /Mac OS/.test(ua) ? "macOS"
      : /Linux/.test(ua) ? "Linux" : "";
    return system ? browser + " (" + system + ")" : browser;
  }

  function subscribe() {  // a push service that never answers (offline) fails too
    var made = registration().then(function (reg) {
      return reg.pushManager.getSubscription().then(function (found) {
        return found || reg.pushManager.subscribe({userVisibleOnly: true,
                                                   applicationServerKey: key()});
      });
    });
    var late = new Promise(function (resolve, reject) {
      setTimeout(function () { reject(new Error("no answer")); }, WAIT);
    });
    return Promise.race([made, late]);
  }

  on.addEventListener("click", function () {
    on.disabled = true;
    say("asking");
    Promise.resolve(Notification.requestPermission()).then(function (permission) {
      if (permission !== "granted") {
        say("blocked");
        show(null);
        return;
      }
      return subscribe().then(function (subscription) {
        var json = subscription.toJSON(), keys = json.keys || {};
        return caches.open(CACHE).then(function (cache) {
          return cache.put("/pbem-push/" + box.getAttribute("data-tag"),
                           new Response(box.getAttribute("data-page")));
        }).then(function () {
          return post(box.getAttribute("data-add"), {endpoint: json.endpoint,
            p256dh: keys.p256dh || "", auth: keys.auth || "", label: label()});
        });
      }, function () {
        say("failed");  // offline, or no push service: nothing was registered
        on.disabled = false;
        return undefined;
      }).then(function (refused) {
        if (refused === null) {
          done("push_added");
        } else if (refused !== undefined) {
          say("refused", refused);
          on.disabled = false;
        }
      });
    }).catch(function () {
      say("failed");
      on.disabled = false;
    });
  });

  off.addEventListener("click", function () {
    off.disabled = true;
    current().then(function (subscription) {
      return subscription ? post(box.getAttribute("data-remove"),
                                 {endpoint: subscription.endpoint}) : null;
    }).then(function (refused) {
      if (refused) {
        say("refused", refused);
        off.disabled = false;
      } else {
        done("push_removed");
      }
    }).catch(function () {
      off.disabled = false;
    });
  });

  if (Notification.permission === "denied") {
    say("blocked");
    return;
  }
  current().then(isMine).then(function (mine) {
    say(mine ? "on" : "off");
    show(mine ? off : on);
  }).catch(function () {
    say("off");
    show(on);
  });
}());
