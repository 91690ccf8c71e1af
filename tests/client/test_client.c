/* test_client.c -- being written. */
int main(void) { return 0; }
