"""simple-evol: every verb that reads a file (tests/fuzz/fuzz.py)."""

NN = ("import numpy as np\\n"
      "def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):\\n"
      "    return unvisited_nodes[np.argmin(distance_matrix[current_node][unvisited_nodes])]\\n")

RECIPES = [
    {"tool": "simple-evol", "verb": "solve",
     "setup": ["simple-evol -q gen --problem tsp --count 3 --nodes 7 -o {w}/t.h5"],
     "inputs": {"instances": "{w}/t.h5"},
     "run": "simple-evol -q solve -i {instances} --method fi -o {out}"},
    {"tool": "simple-evol", "verb": "solve-cvrp",
     "setup": ["simple-evol -q gen --problem cvrp --count 2 --nodes 8 -o {w}/c.h5"],
     "inputs": {"instances": "{w}/c.h5"},
     "run": "simple-evol -q solve -i {instances} --method savings -o {out}"},
    {"tool": "simple-evol", "verb": "solve-fssp",
     "setup": ["simple-evol -q gen --problem fssp --count 2 --jobs 6 --machines 3 -o {w}/f.h5"],
     "inputs": {"instances": "{w}/f.h5"},
     "run": "simple-evol -q solve -i {instances} --method neh -o {out}"},
    {"tool": "simple-evol", "verb": "eval",
     "setup": ["simple-evol -q gen --problem tsp --count 2 --nodes 6 -o {w}/t.h5",
               "printf '" + NN + "' > {w}/nn.py"],
     "inputs": {"instances": "{w}/t.h5"},
     "run": "simple-evol -q eval -i {instances} --heuristic {w}/nn.py --sandbox none -o {out}"},
    {"tool": "simple-evol", "verb": "evolve",
     "setup": ["simple-evol -q gen --problem tsp --count 2 --nodes 6 -o {w}/t.h5",
               "simple-evol -q gen --problem tsp --count 2 --nodes 7 -o {w}/test.h5"],
     "inputs": {"train": "{w}/t.h5", "test": "{w}/test.h5"},
     "run": "simple-evol -q evolve -i {train} --test {test} --llm surrogate:4 --budget 2 --sandbox none -o {out}"},
    {"tool": "simple-evol", "verb": "ice",
     "setup": ["simple-evol -q gen --problem tsp --count 2 --nodes 6 -o {w}/t.h5",
               "simple-evol -q solve -i {w}/t.h5 --method fi --store-reference -o {w}/tr.h5",
               "simple-evol -q evolve -i {w}/tr.h5 --test {w}/tr.h5 --llm surrogate:1 --budget 2 --sandbox none -o {w}/run.h5",
               "simple-evol -q llm --exam --rungs 1 --samples 1 -o {w}/exam.h5"],
     "inputs": {"run": "{w}/run.h5", "exam": "{w}/exam.h5"},
     "run": "simple-evol -q ice -i {run} --exam {exam} -o {out}"},
]
