"""TSP heuristic (select_next_node): near the current city, and not stranding
the cities that remain (a nearest-neighbour score corrected by how central a
candidate is among the unvisited)."""
import numpy as np


def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    if len(unvisited_nodes) == 1:
        return unvisited_nodes[0]
    near = distance_matrix[current_node][unvisited_nodes]
    sub = distance_matrix[np.ix_(unvisited_nodes, unvisited_nodes)]
    spread = sub.sum(axis=1) / (len(unvisited_nodes) - 1)
    home = distance_matrix[destination_node][unvisited_nodes]
    score = near - 0.3 * spread + 0.1 * home * (len(unvisited_nodes) < 5)
    return unvisited_nodes[np.argmin(score)]
