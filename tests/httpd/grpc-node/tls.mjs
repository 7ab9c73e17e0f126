// SPDX-License-Identifier: GPL-2.0
// tls.mjs PORT CERTS: idgen-httpd's gRPC face over TLS with a client
// certificate, through Node's @grpc/grpc-js (grpc.credentials.createSsl)
// and the shipped proto loaded as it is; CERTS from tls-certs.sh.  The
// caller is the certificate's: NextIds naming another is
// PERMISSION_DENIED; without a client certificate, or over an insecure
// channel, UNAVAILABLE.  Prints TAP.
import fs from 'node:fs';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import { IdGen, done, ok } from './tap.mjs';

const [port, certs] = process.argv.slice(2);
const file = (name) => fs.readFileSync(path.join(certs, name));
const client = (creds) => new IdGen(`localhost:${port}`, creds);
const call = (c, method, req) => new Promise((resolve) =>
  c[method](req, { deadline: Date.now() + 10000 }, (err, res) => resolve({ err, res })));

const orders = client(grpc.credentials.createSsl(file('ca.pem'), file('spiffe.key'),
  file('spiffe.pem')));
let r = await call(orders, 'NextIds', { count: 4 });
const ids = r.err ? [] : r.res.ids.map(BigInt);
ok(!r.err && ids.length === 4 && ids.every((b, i) => i === 0 || ids[i - 1] < b),
  'NextIds over TLS with a SPIFFE client certificate: 4 IDs, strictly increasing',
  r.err || JSON.stringify(r.res));
r = await call(orders, 'NextIds', { count: 1, caller: 'order-service' });
ok(!r.err, 'NextIds naming its own caller: answered', r.err);
r = await call(orders, 'NextIds', { count: 1, caller: 'billing' });
ok(r.err && r.err.code === grpc.status.PERMISSION_DENIED,
  'NextIds naming another caller: PERMISSION_DENIED', r.err ? r.err.code : 'answered');
r = await call(orders, 'DecodeId', { id: '108421920055775237' });
ok(!r.err && r.res.worker === 37, 'DecodeId over TLS', r.err || JSON.stringify(r.res));
orders.close();

for (const [desc, creds] of [
  ['no client certificate', grpc.credentials.createSsl(file('ca.pem'))],
  ['an insecure channel to the TLS port', grpc.credentials.createInsecure()],
]) {
  const c = client(creds);
  r = await call(c, 'NextIds', { count: 1 });
  ok(r.err && r.err.code === grpc.status.UNAVAILABLE, `${desc}: UNAVAILABLE`,
    r.err ? r.err.code : 'answered');
  c.close();
}

done();
