"""sae_judge.py - a stand-in judge for sae-buffer eval --judge-cmd (the
protocol in sae-buffer(1)): it reads the request on stdin and says a latent
fires on a query whose marked token is one of the examples' marked tokens.
A real judge is an LLM behind the same protocol; this one tests the plumbing
and that token-level latents score above chance. With 'bad' it answers out
of protocol."""
import json, re, sys

request = json.load(sys.stdin)
if len(sys.argv) > 1 and sys.argv[1] == "bad":
    print("no idea")
    sys.exit(0)
marked = lambda text: re.search(r"<<(.*?)>>", text, re.S).group(1)
seen = {marked(e) for e in request["examples"]}
print(json.dumps({"fires": [marked(q) in seen for q in request["queries"]]}))
