// Signing in: with the identity provider, with a pasted API token, or both, as the
// server offers (GET /auth/session); after a sign-out, the provider's sign-out link.

import { html } from "../components.js";

/**
 * The sign-in form. `options` is what the server offers ({ provider, tokenSignIn });
 * `endSessionUrl` the provider's sign-out after a session ended here; `onToken(token)`
 * signs in with a pasted token.
 */
export function SignInView({ options, endSessionUrl, onToken }) {
  const parts = html`
    <h2>Sign in</h2>
    ${options.provider
      ? html`<a id="provider-sign-in" class="button primary" href="/auth/sign-in">Sign in with your company account</a>`
      : null}
    ${endSessionUrl
      ? html`<p class="hint">
          You are signed out of Signoff. <a id="provider-sign-out" href=${endSessionUrl}>Also sign out at your identity provider</a>
        </p>`
      : null}
  `;
  if (!options.tokenSignIn) return html`<div class="sign-in">${parts}</div>`;
  const submit = (event) => {
    event.preventDefault();
    onToken(event.target.elements.token.value.trim());
  };
  return html`<form class="sign-in" onSubmit=${submit}>
    ${parts}
    <label for="token">API token</label>
    <input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required aria-describedby="token-help" />
    <p id="token-help" class="hint">
      The token from signoff token create. It stays in this tab only (sessionStorage) and is sent in the Authorization header, never in a cookie or a URL.
    </p>
    <button type="submit" class="primary">Sign in</button>
  </form>`;
}

/** Where the keyboard starts on the sign-in view. */
export function focusSignIn() {
  const field = document.getElementById("token") || document.getElementById("provider-sign-in");
  if (field) field.focus();
}
