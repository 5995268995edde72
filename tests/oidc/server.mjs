// A real OAuth 2.0 authorization server (oidc-provider) on loopback, for halo-axum's JWT tests
// (halo-tests' `oidc::AuthorizationServer` starts it). One confidential client may use the
// client-credentials grant with a resource indicator (RFC 8707); the access tokens are JWTs
// (RFC 9068) signed with RS256 for that resource.
//
// Environment: HALO_OIDC_RESOURCE (the API's resource identifier, the tokens' audience),
// HALO_OIDC_SCOPES (the scopes the API knows, space-separated), HALO_OIDC_CLIENT_ID,
// HALO_OIDC_CLIENT_SECRET, HALO_OIDC_CLIENT_SCOPES (what that client may be granted), and
// optionally HALO_OIDC_DEFAULT_RESOURCE=0: a token request without a `resource` then gets an
// opaque token for no resource instead of a JWT for HALO_OIDC_RESOURCE; and
// HALO_OIDC_TOKEN_FORMAT=opaque: the tokens for HALO_OIDC_RESOURCE are opaque, to be checked
// at the introspection endpoint (RFC 7662) by the API's own client, HALO_OIDC_API_CLIENT_ID
// with HALO_OIDC_API_CLIENT_SECRET (HTTP Basic).
// It listens on 127.0.0.1 at a port the OS picks and prints one line of JSON,
// {"issuer": "http://127.0.0.1:<port>"}, once it answers.
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`server.mjs: ${name} is not set`);
    process.exit(2);
  }
  return value;
};
const resource = env('HALO_OIDC_RESOURCE');
const scopes = env('HALO_OIDC_SCOPES');
const defaultResource = process.env.HALO_OIDC_DEFAULT_RESOURCE === '0' ? undefined : resource;
const opaque = process.env.HALO_OIDC_TOKEN_FORMAT === 'opaque';
const client = {
  client_id: env('HALO_OIDC_CLIENT_ID'),
  client_secret: env('HALO_OIDC_CLIENT_SECRET'),
  grant_types: ['client_credentials'],
  token_endpoint_auth_method: 'client_secret_post',
  redirect_uris: [],
  response_types: [],
  scope: env('HALO_OIDC_CLIENT_SCOPES'),
};

// A fresh RS256 signing key per run.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: 'halo-test-rs256', alg: 'RS256', use: 'sig' };

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: opaque
      ? [client, {
        client_id: env('HALO_OIDC_API_CLIENT_ID'),
        client_secret: env('HALO_OIDC_API_CLIENT_SECRET'),
        grant_types: ['client_credentials'],
        token_endpoint_auth_method: 'client_secret_basic',
        redirect_uris: [],
        response_types: [],
      }]
      : [client],
    jwks: { keys: [signing] },
    scopes: scopes.split(' '),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: opaque },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => defaultResource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== resource) {
            throw new Provider.errors.InvalidTarget();
          }
          return {
            scope: scopes,
            audience: resource,
            accessTokenTTL: 300,
            ...(opaque
              ? { accessTokenFormat: 'opaque' }
              : { accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
          };
        },
      },
    },
  });
  server.on('request', provider.callback());
  console.log(JSON.stringify({ issuer }));
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
