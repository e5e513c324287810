// The OpenID provider the tests sign in against: panva's certified oidc-provider, run
// as `node provider.mjs` with its whole setup in the environment.
//
//   OIDC_PORT          port on 127.0.0.1; the issuer is http://127.0.0.1:<port>
//   OIDC_JWKS_FILE     private JWKS; its first key signs (a test rotates keys by starting
//                      the provider again with another file)
//   OIDC_DIRECTORY     JSON: {"users": {id: {name, email, groups}}, "clients": {id:
//                      {secret, groups}}}, read again on every use (a test edits groups)
//   OIDC_AUDIENCES     resource indicators (audiences) the provider issues JWTs for
//   OIDC_CONSOLE_SECRET, OIDC_REDIRECT_URI, OIDC_POST_LOGOUT_URI: the console's client
import { readFileSync } from 'node:fs';
import Provider, { errors } from 'oidc-provider';

const env = process.env;
const port = Number(env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const audiences = (env.OIDC_AUDIENCES || '').split(',').filter(Boolean);
const directory = () => JSON.parse(readFileSync(env.OIDC_DIRECTORY, 'utf8'));
const machineClients = Object.entries(directory().clients || {}).map(([id, c]) => ({
  client_id: id,
  client_secret: c.secret,
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  scope: 'signoff',
}));

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'signoff-console',
      client_secret: env.OIDC_CONSOLE_SECRET,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [env.OIDC_REDIRECT_URI],
      post_logout_redirect_uris: [env.OIDC_POST_LOGOUT_URI],
    },
    ...machineClients,
  ],
  jwks: JSON.parse(readFileSync(env.OIDC_JWKS_FILE, 'utf8')),
  cookies: { keys: ['signoff-tests-only'] },
  scopes: ['openid', 'offline_access', 'profile', 'email', 'groups', 'signoff'],
  claims: { openid: ['sub'], profile: ['name'], email: ['email'], groups: ['groups'] },
  // The ID token carries the scopes' claims: the console's backend reads groups there.
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  async findAccount(ctx, id) {
    const user = directory().users[id];
    if (!user) return undefined;
    return {
      accountId: id,
      async claims() {
        const now = directory().users[id];
        if (!now) return { sub: id };
        return { sub: id, name: now.name, email: now.email, groups: now.groups };
      },
    };
  },
  // First-party console: no consent screen, every scope it asks for is granted.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) {
      const found = await ctx.oidc.provider.Grant.find(grantId);
      if (found) return found;
    }
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid offline_access profile email groups');
    await grant.save();
    return grant;
  },
  async issueRefreshToken(ctx, client) {
    return client.grantTypeAllowed('refresh_token');
  },
  async extraTokenClaims(ctx, token) {
    const known = directory();
    if (token.accountId) return { groups: known.users[token.accountId]?.groups || [] };
    return { groups: known.clients?.[token.clientId]?.groups || [] };
  },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (ctx, client, oneOf) => oneOf,
      useGrantedResource: async () => false,
      async getResourceServerInfo(ctx, resourceIndicator) {
        if (!audiences.includes(resourceIndicator)) throw new errors.InvalidTarget();
        return {
          scope: 'signoff',
          audience: resourceIndicator,
          accessTokenTTL: 600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening at ${issuer}`);
});
