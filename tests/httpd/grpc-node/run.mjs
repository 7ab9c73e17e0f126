// SPDX-License-Identifier: GPL-2.0
// run.mjs PORT WORKER: idgen-httpd's gRPC face through Node's
// @grpc/grpc-js and @grpc/proto-loader (versions pinned in
// package-lock.json, installed by tests/httpd/run.sh with npm ci), with
// the shipped proto/idgen/v1/idgen.proto loaded as it is: IDs come as
// strings (longs: String) and must round-trip exactly through BigInt,
// far past 2^53.  Prints TAP.
import grpc from '@grpc/grpc-js';
import { IdGen, done, ok } from './tap.mjs';

const [port, worker] = process.argv.slice(2);
const client = new IdGen(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
const deadline = () => ({ deadline: Date.now() + 10000 });
const call = (method, req) => new Promise((resolve) =>
  client[method](req, deadline(), (err, res) => resolve({ err, res })));

const fields = (id) => ({
  ms: id >> 22n, region: (id >> 19n) & 7n, worker: (id >> 12n) & 127n, seq: id & 4095n,
});

let r = await call('NextIds', { count: 5, caller: 'node' });
const ids = r.err ? [] : r.res.ids;
ok(!r.err && ids.length === 5 && ids.every((s) => typeof s === 'string'),
  'NextIds count 5: five IDs, as strings (longs: String)', r.err || JSON.stringify(r.res));
const big = ids.map(BigInt);
ok(big.every((b, i) => i === 0 || big[i - 1] < b), '... strictly increasing, compared as BigInt',
  ids.join(' '));
ok(big.every((b, i) => b.toString() === ids[i] && b > 2n ** 53n),
  '... each past 2^53, exact through BigInt and back', ids.join(' '));
ok(big.every((b) => fields(b).worker === BigInt(worker) && fields(b).region === 0n),
  `... each of region 0 and worker ${worker}`, ids.join(' '));
ok(!r.err && r.res.layout_version === 1, '... layout_version 1', JSON.stringify(r.res));

r = await call('DecodeId', { id: '108421920055775237' });
ok(!r.err && r.res.id === '108421920055775237' && r.res.region === 1 && r.res.worker === 37 &&
   r.res.sequence === 5 && r.res.created_at.seconds === '1793075400' &&
   r.res.created_at.nanos === 123000000,
'DecodeId of the contract\'s example, the ID back exactly', r.err || JSON.stringify(r.res));

r = await call('DecodeId', { id: ids[4] });
ok(!r.err && r.res.id === ids[4] && BigInt(r.res.sequence) === fields(big[4]).seq,
  'DecodeId of a minted ID: the same string back, its sequence', r.err || JSON.stringify(r.res));

r = await call('MinIdAt', { at: { seconds: '1795000000', nanos: 5999999 } });
const want = ((1795000000005n - 1767225600000n) << 22n).toString();
ok(!r.err && r.res.id === want, 'MinIdAt: the millisecond\'s smallest ID, exact',
  r.err || JSON.stringify(r.res));

r = await call('NextIds', { count: 10001 });
ok(r.err && r.err.code === grpc.status.INVALID_ARGUMENT, 'count 10001: INVALID_ARGUMENT',
  r.err ? r.err.code : 'answered');
r = await call('DecodeId', { id: '-1' });
ok(r.err && r.err.code === grpc.status.INVALID_ARGUMENT, 'DecodeId of -1: INVALID_ARGUMENT',
  r.err ? r.err.code : 'answered');

client.close();
done();
