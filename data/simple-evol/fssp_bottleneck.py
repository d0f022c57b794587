"""FSSP-GLS heuristic (get_matrix_and_jobs): stretch the most loaded machine
and move the jobs that weigh most on it."""
import numpy as np


def get_matrix_and_jobs(current_sequence, time_matrix, m, n):
    machine = int(np.argmax(time_matrix.sum(axis=0)))
    perturbed = time_matrix.copy()
    perturbed[:, machine] *= 1.2
    jobs = np.argsort(-time_matrix[:, machine])[:5]
    return perturbed, jobs
