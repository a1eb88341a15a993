// A stand-in for the Hugging Face Hub on 127.0.0.1, serving files a test generated with the Hub's
// URL layout and headers (as huggingface_hub reads them):
//   GET  /api/models/ORG/NAME/revision/REV   {"id", "sha", "siblings": [{"rfilename"}]}
//   HEAD|GET /ORG/NAME/resolve/REV/FILE      small files: 200, ETag = git blob sha1, X-Repo-Commit;
//                                            *.safetensors (LFS): 302 to /cdn/SHA256 with
//                                            X-Linked-Etag = sha256, X-Linked-Size, X-Repo-Commit
//   GET  /cdn/SHA256                         the bytes, with Range (206)
// Errors carry X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo) like the
// Hub's. Faults for tests: cut a CDN transfer, corrupt it, ignore Range.
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');
const gitSha1 = (buf) =>
  createHash('sha1').update(Buffer.concat([Buffer.from(`blob ${buf.length}\0`), buf])).digest('hex');

// A repository from a checkpoint folder, plus files recur must not download.
export function repoFromDir(dir, { commit = 'c0ffee'.padEnd(40, '0'), extra = true } = {}) {
  const files = new Map();
  for (const name of readdirSync(dir)) files.set(name, readFileSync(join(dir, name)));
  if (extra) {
    files.set('README.md', Buffer.from('# a model card\n'));
    files.set('pytorch_model.bin', Buffer.from('pickled weights recur never loads'));
    files.set('onnx/model.onnx', Buffer.from('onnx'));
  }
  return { commit, refs: { main: commit }, files, gated: false };
}

export async function startHub(repos, { token = null } = {}) {
  const log = [];
  const faults = { cut: new Map(), corrupt: new Set(), ignoreRange: false };
  const blobs = new Map();  // sha256 -> Buffer
  for (const repo of repos.values()) {
    for (const [name, buf] of repo.files) if (name.endsWith('.safetensors')) blobs.set(sha256(buf), buf);
  }
  const fail = (res, status, code, message) => {
    res.writeHead(status, { 'X-Error-Code': code, 'X-Error-Message': message,
                            'Content-Type': 'application/json' });
    res.end(JSON.stringify({ error: message }));
  };
  // The repository a request names, or an error already sent.
  const repoFor = (req, res, id) => {
    const repo = repos.get(id);
    if (!repo) { fail(res, 401, 'RepoNotFound', 'Repository not found'); return null; }
    if (repo.gated && req.headers.authorization !== `Bearer ${token}`) {
      fail(res, 403, 'GatedRepo', `Access to model ${id} is restricted: you must be authenticated and accept its conditions`);
      return null;
    }
    return repo;
  };
  const commitOf = (repo, rev) => (repo.refs[rev] ?? (rev === repo.commit ? rev : null));

  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    log.push({ method: req.method, path: decodeURIComponent(url.pathname),
               range: req.headers.range ?? null, auth: req.headers.authorization ?? null });
    let m = url.pathname.match(/^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/);
    if (m && req.method === 'GET') {
      const repo = repoFor(req, res, m[1]);
      if (!repo) return;
      const commit = commitOf(repo, decodeURIComponent(m[2]));
      if (!commit) return fail(res, 404, 'RevisionNotFound', 'Invalid rev id');
      res.writeHead(200, { 'Content-Type': 'application/json' });
      return res.end(JSON.stringify({ id: m[1], sha: commit,
                                      siblings: [...repo.files.keys()].map((f) => ({ rfilename: f })) }));
    }
    m = url.pathname.match(/^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/);
    if (m && (req.method === 'GET' || req.method === 'HEAD')) {
      const repo = repoFor(req, res, m[1]);
      if (!repo) return;
      const commit = commitOf(repo, decodeURIComponent(m[2]));
      if (!commit) return fail(res, 404, 'RevisionNotFound', 'Invalid rev id');
      const name = decodeURIComponent(m[3]);
      const buf = repo.files.get(name);
      if (!buf) return fail(res, 404, 'EntryNotFound', `${name} does not exist`);
      if (name.endsWith('.safetensors')) {
        const oid = sha256(buf);
        res.writeHead(302, { Location: `http://127.0.0.1:${server.address().port}/cdn/${oid}`,
                             'X-Linked-Etag': `"${oid}"`, 'X-Linked-Size': String(buf.length),
                             'X-Repo-Commit': commit, ETag: `"${gitSha1(Buffer.from(oid))}"`,
                             'Content-Length': '0' });
        return res.end();
      }
      res.writeHead(200, { ETag: `"${gitSha1(buf)}"`, 'X-Repo-Commit': commit,
                           'Content-Length': String(buf.length) });
      return res.end(req.method === 'HEAD' ? undefined : buf);
    }
    m = url.pathname.match(/^\/cdn\/([0-9a-f]{64})$/);
    if (m && req.method === 'GET' && blobs.has(m[1])) {
      let buf = blobs.get(m[1]);
      if (faults.corrupt.has(m[1])) { buf = Buffer.from(buf); buf[buf.length >> 1] ^= 0xff; }
      let start = 0;
      const r = req.headers.range?.match(/^bytes=(\d+)-$/);
      if (r && !faults.ignoreRange) start = Number(r[1]);
      if (start > buf.length) { res.writeHead(416); return res.end(); }
      const body = buf.subarray(start);
      const headers = { 'Content-Length': String(body.length), 'Content-Type': 'application/octet-stream' };
      if (start > 0) headers['Content-Range'] = `bytes ${start}-${buf.length - 1}/${buf.length}`;
      res.writeHead(start > 0 ? 206 : 200, headers);
      const cuts = faults.cut.get(m[1]) ?? 0;
      if (cuts > 0 && body.length > 1) {
        // A connection that dies mid-file: part of the body, then a reset.
        faults.cut.set(m[1], cuts - 1);
        res.write(body.subarray(0, Math.max(1, Math.floor(body.length * 0.4))), () => res.socket.destroy());
        return;
      }
      return res.end(body);
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('not found');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${server.address().port}`,
    log, faults, sha256, gitSha1,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}
