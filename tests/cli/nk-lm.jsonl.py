"""nk-lm.jsonl.py GEN.jsonl GEN.txt ODD.jsonl - checks of generate --jsonl
(nk-lm.sh): the prompts come back, prompt + completion is the plain output's
line wherever the completion holds no newline, and a prompt with a quote, a
backslash and an invalid byte decodes to them with U+FFFD for the byte."""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1], encoding='utf-8')]
plain = open(sys.argv[2], 'rb').read().decode('utf-8', errors='replace')
assert [r['prompt'] for r in rows] == ['The cat', 'Paper 3:'], rows
if not any('\n' in r['completion'] for r in rows):
    assert ''.join(r['prompt'] + r['completion'] + '\n' for r in rows) == plain, (rows, plain)
odd = json.loads(open(sys.argv[3], encoding='utf-8').read())
assert odd['prompt'] == 'a\\"\ufffdb', odd
