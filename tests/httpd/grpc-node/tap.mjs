// SPDX-License-Identifier: GPL-2.0
// What run.mjs and tls.mjs share: TAP (ok() numbers each check, done()
// prints the plan and exits 1 if any failed) and the IdGen service from
// the shipped proto/idgen/v1/idgen.proto, loaded as it is: IDs as strings
// (longs: String).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const top = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
let n = 0;
let failed = false;

export function ok(cond, desc, why = '') {
  n++;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} ${desc}`);
  if (!cond) {
    failed = true;
    for (const line of String(why).split('\n')) console.log(`# ${line}`);
  }
}

export function done() {
  console.log(`1..${n}`);
  process.exit(failed ? 1 : 0);
}

const def = protoLoader.loadSync('idgen/v1/idgen.proto', {
  includeDirs: [path.join(top, 'proto'), '/usr/include'],
  keepCase: true, longs: String, enums: String, defaults: true, oneofs: true,
});
export const { IdGen } = grpc.loadPackageDefinition(def).idgen.v1;
