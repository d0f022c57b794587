"""tnqe-encode's peer in the benchmark venv (PyPI qiskit; tests never use it).

- Amplitude encoding by Qiskit: the state our baseline's OpenQASM prepares
  (read back by qiskit.qasm2 and simulated with Statevector, so pixel order,
  padding and norm are exactly ours) given to qiskit.circuit.library.
  StatePreparation, transpiled to CX + U at optimisation level 3 (seed 1):
  its CNOT count and depth next to our baseline's; and the same state by
  QuantumCircuit.initialize (a reset, then the same synthesis), transpiled
  likewise with reset in the basis.
- Independent fidelity: Qiskit's Statevector of each TNQE circuit's
  OpenQASM against that state, |<baseline|tnqe>|^2, next to the fidelity
  tnqe-encode reports.

Prints the Qiskit version, then one line per circuit:
  qiskit-amplitude CX DEPTH SECONDS
  qiskit-initialize CX DEPTH SECONDS
  ours-amplitude CX DEPTH
  NAME CX DEPTH FIDELITY_BY_QISKIT

usage: qiskit_peer.py BASELINE.qasm [NAME=TNQE.qasm]...
"""
import sys
import time

import numpy as np
import qiskit
from qiskit import qasm2, transpile
from qiskit.circuit.library import StatePreparation
from qiskit.quantum_info import Statevector


def load(path):
    return qasm2.load(path, custom_instructions=qasm2.LEGACY_CUSTOM_INSTRUCTIONS)


def counts(circuit):
    ops = circuit.count_ops()
    return int(ops.get("cx", 0)), circuit.depth()


print(f"qiskit {qiskit.__version__}", flush=True)
baseline = load(sys.argv[1])
target = Statevector(baseline.remove_final_measurements(inplace=False))
t0 = time.perf_counter()
prep = qiskit.QuantumCircuit(baseline.num_qubits)
prep.append(StatePreparation(target.data), range(baseline.num_qubits))
compiled = transpile(prep, basis_gates=["cx", "u"], optimization_level=3, seed_transpiler=1)
seconds = time.perf_counter() - t0
cx, depth = counts(compiled)
print(f"qiskit-amplitude {cx} {depth} {seconds:.1f}", flush=True)
t0 = time.perf_counter()
init = qiskit.QuantumCircuit(baseline.num_qubits)
init.initialize(target.data, range(baseline.num_qubits))
compiled = transpile(init, basis_gates=["cx", "u", "reset"], optimization_level=3, seed_transpiler=1)
cx, depth = counts(compiled)
print(f"qiskit-initialize {cx} {depth} {time.perf_counter() - t0:.1f}", flush=True)
cx, depth = counts(baseline)
print(f"ours-amplitude {cx} {depth}", flush=True)
for spec in sys.argv[2:]:
    name, path = spec.split("=", 1)
    circuit = load(path)
    state = Statevector(circuit.remove_final_measurements(inplace=False))
    fidelity = abs(np.vdot(target.data, state.data)) ** 2
    cx, depth = counts(circuit)
    print(f"{name} {cx} {depth} {fidelity:.6f}", flush=True)
