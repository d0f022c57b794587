"""TSP seed heuristic (select_next_node): the nearest unvisited city."""
import numpy as np


def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    return unvisited_nodes[np.argmin(distance_matrix[current_node][unvisited_nodes])]
