// The service worker of a browser that asked to be notified of a seat's turns (served as
// /sw.js, scope /g/; registered by static/push.js). A push carries a small JSON object:
// title, body, the game's id and a tag, and never a link (the push service stores it).
// A click on the notification opens the game page the browser kept under that tag when
// the player subscribed on it, or brings that page to the front if it is open already.
"use strict";

var CACHE = "pbem-push";

self.addEventListener("push", function (event) {
  var data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch (e) {
    data = {};
  }
  var tag = typeof data.tag === "string" ? data.tag : "pbem";
  event.waitUntil(self.registration.showNotification(
    typeof data.title === "string" && data.title ? data.title : "pbem",
    {body: typeof data.body === "string" ? data.body : "", tag: tag, renotify: true,
     data: {tag: tag}}));
});

function keptPage(tag) {
  return caches.open(CACHE).then(function (cache) {
    return cache.match("/pbem-push/" + tag);
  }).then(function (found) {
    return found ? found.text() : "/";
  }).then(function (url) {
    var page = new URL(url, self.location.href);
    return page.origin === self.location.origin ? page.href : new URL("/", self.location.href).href;
  });
}

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var tag = (event.notification.data && event.notification.data.tag) || "";
  event.waitUntil(keptPage(tag).then(function (url) {
    return self.clients.matchAll({type: "window", includeUncontrolled: true})
      .then(function (open) {
        for (var i = 0; i < open.length; i++) {
          if (open[i].url.split("?")[0] === url.split("?")[0] && "focus" in open[i]) {
            return open[i].focus();
          }
        }
        return self.clients.openWindow(url);
      });
  }));
});
