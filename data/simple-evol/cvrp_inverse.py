"""CVRP-ACO seed heuristic (heuristics): ReEvo's 1/d edge desirability."""
import numpy as np


def heuristics(distance_matrix, coordinates, demands, capacity):
    return 1 / distance_matrix
