/*
 * labs.c -- every lab `kplane lab` knows, in the order `kplane lab list`
 * prints them. A lab is one lab_*.c file defining one lab_def_t; adding one
 * is that file, a line here and a line in CMakeLists.txt.
 */
#include "lab/lab.h"

extern const lab_def_t lab_exercise, lab_kill_the_truth, lab_central_brain;

const lab_def_t *const lab_all[] = {&lab_exercise, &lab_central_brain, &lab_kill_the_truth, NULL};
