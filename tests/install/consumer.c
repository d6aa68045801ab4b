/* An installed ferry's Flight from C: serve the IPC file argv[1] as flight "t" on loopback, list
 * the server's flights and check that there is one, named t, of argv[2] records (the caller counts
 * them with pyarrow). Exit status 0, or 1 with the step that failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/capi/ferry.h"
#include "ferry/capi/flight.h"

static int Fail(const char* step, const struct FerryError* error) {
  fprintf(stderr, "consumer: %s: %s\n", step, error != NULL ? error->message : "");
  return 1;
}

int main(int argc, char** argv) {
  struct FerryFlightServer* server = NULL;
  struct FerryFlightClient* client = NULL;
  struct FerryFlightInfo* info = NULL;
  struct FerryFlightClientOptions options = {NULL, NULL, NULL, NULL, NULL, 10000};
  struct FerryError error;
  char uri[256];
  int status = 0;
  if (argc != 3) return Fail("usage: consumer FILE RECORDS", NULL);
  if (FerryFlightServerStart("127.0.0.1:0", NULL, &server, &error) != 0) {
    return Fail("FerryFlightServerStart", &error);
  }
  if (FerryFlightServerAddPath(server, "t", argv[1], &error) != 0 ||
      FerryFlightServerUri(server, uri, sizeof(uri), &error) != 0 ||
      FerryFlightConnect(uri, &options, &client, &error) != 0 ||
      FerryFlightListFlights(client, &info, &error) != 0) {
    status = Fail("serving and listing", &error);
  } else if (FerryFlightInfoCount(info) != 1 || FerryFlightInfoPath(info, 0) == NULL ||
             strcmp(FerryFlightInfoPath(info, 0), "t") != 0 ||
             FerryFlightInfoTotalRecords(info, 0) != strtoll(argv[2], NULL, 10)) {
    fprintf(stderr, "consumer: %zu flights, the first of %lld records; expected 1 of %s\n",
            FerryFlightInfoCount(info), (long long)FerryFlightInfoTotalRecords(info, 0), argv[2]);
    status = 1;
  } else {
    printf("consumer: %s lists flight t with %s records\n", uri, argv[2]);
  }
  FerryFlightInfoRelease(info);
  FerryFlightClientRelease(client);
  FerryFlightServerRelease(server);
  return status;
}
