// Encodes documents with the reference TOON encoder, @toon-format/toon 2.3.1
// (TOON specification 3.3), for the differential tests in reference_test.go.
//
// Usage: node reference.mjs <node_modules dir>
//
// Each stdin line is a JSON request {"json": <document text>, "indent": n,
// "delimiter": d, "keyFolding": m, "flattenDepth": k}; keyFolding and
// flattenDepth may be absent, which means the reference's defaults ("off"
// and Infinity). Each request gets exactly one stdout line, in order:
// {"toon": <encoding>} or {"error": <message>}. An encoding that holds an
// unpaired UTF-16 surrogate (JSON.parse accepts \ud800, and the encoder
// passes it through) cannot be written as UTF-8; JSON.stringify would escape
// it and Go would read U+FFFD, so the answer also carries "illFormed": true.
// The document travels as text so that JSON.parse sees exactly the bytes the
// Go encoder sees. The process runs until stdin closes, so one instance
// serves a whole test run.

import { createRequire } from 'node:module'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'

const nodeModules = process.argv[2]
if (!nodeModules) {
  process.stderr.write('usage: node reference.mjs <node_modules dir>\n')
  process.exit(2)
}

// Resolve the package as if from a file inside node_modules, since this
// script lives outside the tree npm installed.
const requireFrom = createRequire(join(nodeModules, 'reference-resolver.js'))
const { encode } = await import(pathToFileURL(requireFrom.resolve('@toon-format/toon')).href)

function answer(line) {
  try {
    const req = JSON.parse(line)
    // The option names of @toon-format/toon 2.x's EncodeOptions.
    const options = { indent: req.indent, delimiter: req.delimiter }
    if (req.keyFolding !== undefined) options.keyFolding = req.keyFolding
    if (req.flattenDepth !== undefined) options.flattenDepth = req.flattenDepth
    const toon = encode(JSON.parse(req.json), options)
    if (!toon.isWellFormed()) return JSON.stringify({ toon, illFormed: true })
    return JSON.stringify({ toon })
  }
  catch (err) {
    return JSON.stringify({ error: String(err?.message ?? err) })
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
for await (const line of lines) {
  process.stdout.write(`${answer(line)}\n`)
}
