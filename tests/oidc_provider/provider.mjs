// The OpenID provider the tests sign in against (and the README's worked example): panva's
// certified oidc-provider, run as `node tests/oidc_provider/provider.mjs [--port 9400]
// [--signoff http://127.0.0.1:8000/]`, the rest of its setup in the environment:
//
//   OIDC_JWKS_FILE     private JWKS; its first key signs (a test rotates keys by starting
//                      the provider again with another file). Unset: oidc-provider's
//                      development key.
//   OIDC_DIRECTORY     JSON: {"users": {id: {name, email, groups}}, "clients": {id:
//                      {secret, groups}}}, read again on every use (a test edits groups);
//                      directory.json beside this file unless set
//   OIDC_AUDIENCES     resource indicators (audiences) it issues JWT access tokens for;
//                      unset: <signoff>graphql
//   OIDC_CONSOLE_SECRET, OIDC_REDIRECT_URI, OIDC_POST_LOGOUT_URI: the console's client
//                      (signoff-console-secret, <signoff>auth/callback and <signoff>)
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import Provider, { errors } from 'oidc-provider';

const env = process.env;
const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: env.OIDC_PORT || '9400' },
    signoff: { type: 'string', default: 'http://127.0.0.1:8000/' },
  },
});
const port = Number(args.port);
const signoff = args.signoff.endsWith('/') ? args.signoff : `${args.signoff}/`;
const issuer = `http://127.0.0.1:${port}`;
const audiences = (env.OIDC_AUDIENCES || `${signoff}graphql`).split(',').filter(Boolean);
const directoryFile = env.OIDC_DIRECTORY || new URL('directory.json', import.meta.url);
const directory = () => JSON.parse(readFileSync(directoryFile, 'utf8'));
const machineClients = Object.entries(directory().clients || {}).map(([id, c]) => ({
  client_id: id,
  client_secret: c.secret,
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  scope: 'signoff',
}));
const jwks = env.OIDC_JWKS_FILE ? JSON.parse(readFileSync(env.OIDC_JWKS_FILE, 'utf8')) : undefined;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'signoff-console',
      client_secret: env.OIDC_CONSOLE_SECRET || 'signoff-console-secret',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [env.OIDC_REDIRECT_URI || `${signoff}auth/callback`],
      post_logout_redirect_uris: [env.OIDC_POST_LOGOUT_URI || signoff],
    },
    ...machineClients,
  ],
  ...(jwks ? { jwks } : {}),
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
