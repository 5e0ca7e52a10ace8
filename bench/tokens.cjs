// Token counter for the codemode benchmark: reads one JSON string per line
// on stdin and writes its o200k_base token count (gpt-tokenizer), one per
// line. One process serves every count of a run.
// Usage: node tokens.cjs <node_modules dir>
const path = require('path');
const readline = require('readline');
const { countTokens } = require(path.join(process.argv[2], 'gpt-tokenizer', 'cjs', 'encoding', 'o200k_base.js'));
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
	process.stdout.write(String(countTokens(JSON.parse(line))) + '\n');
});
