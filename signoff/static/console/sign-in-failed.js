// The sign-in failure page is the provider's redirect back (/auth/callback?code=…&state=…):
// the one-time code and state leave the address bar and the history, so a reload or a
// shared address carries neither.
history.replaceState(null, "", "/auth/callback");
