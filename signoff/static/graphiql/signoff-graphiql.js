// Signoff's own start-up for the vendored GraphiQL: one endpoint for HTTP and
// graphql-transport-ws (GraphiQL sends the Headers tab as the websocket's
// connection_init payload), and the Headers tab is never written to localStorage,
// so a bearer token does not outlive the tab. A first visit opens on the worked
// example's operations (starter.graphql) and a Headers template to fill in.
(function () {
  "use strict";

  // GraphiQL 3 keeps each run's headers in its history ("graphiql:queries") even with
  // shouldPersistHeaders off, so everything it stores passes through here first and
  // loses its "headers" fields.
  function withoutHeaders(value) {
    if (Array.isArray(value)) return value.map(withoutHeaders);
    if (value === null || typeof value !== "object") return value;
    var copy = {};
    Object.keys(value).forEach(function (key) {
      copy[key] = key === "headers" ? null : withoutHeaders(value[key]);
    });
    return copy;
  }

  var storage = {
    getItem: function (key) {
      return window.localStorage.getItem(key);
    },
    setItem: function (key, value) {
      var stored = value;
      try {
        stored = JSON.stringify(withoutHeaders(JSON.parse(value)));
      } catch (notJson) {
        stored = value;
      }
      window.localStorage.setItem(key, stored);
    },
    removeItem: function (key) {
      window.localStorage.removeItem(key);
    },
    clear: function () {
      window.localStorage.clear();
    },
    key: function (index) {
      return window.localStorage.key(index);
    },
    get length() {
      return window.localStorage.length;
    },
  };

  var url = new URL("/graphql", window.location.href);
  var subscriptionUrl = new URL(url.href);
  subscriptionUrl.protocol = url.protocol === "https:" ? "wss:" : "ws:";

  var fetcher = GraphiQL.createFetcher({
    url: url.href,
    subscriptionUrl: subscriptionUrl.href,
  });

  var HEADERS_TEMPLATE = '{\n  "Authorization": "Bearer <a token from signoff token create>"\n}\n';

  function render(starter) {
    var root = ReactDOM.createRoot(document.getElementById("graphiql"));
    root.render(
      React.createElement(GraphiQL, {
        fetcher: fetcher,
        defaultQuery: starter,
        defaultHeaders: HEADERS_TEMPLATE,
        defaultEditorToolsVisibility: "headers",
        isHeadersEditorEnabled: true,
        shouldPersistHeaders: false,
        storage: storage,
        inputValueDeprecation: true,
      }),
    );
  }

  fetch("/static/graphiql/starter.graphql")
    .then(function (response) {
      return response.ok ? response.text() : "";
    })
    .catch(function () {
      return "";
    })
    .then(render);
})();
