//! The call labels of DUMPI records: the position of each name is the 16-bit label sst-dumpi
//! writes before the record (its `dumpi_function` enumeration, as the footer's call counts list
//! it). Labels past the list are `MPI_ALL_FUNCTIONS` (290), the function entry and exit records
//! of compiler instrumentation (291, 292) and the end of the stream (293).

/// Names of labels 0 to 289.
pub const NAMES: [&str; 290] = [
    "MPI_Send",
    "MPI_Recv",
    "MPI_Get_count",
    "MPI_Bsend",
    "MPI_Ssend",
    "MPI_Rsend",
    "MPI_Buffer_attach",
    "MPI_Buffer_detach",
    "MPI_Isend",
    "MPI_Ibsend",
    "MPI_Issend",
    "MPI_Irsend",
    "MPI_Irecv",
    "MPI_Wait",
    "MPI_Test",
    "MPI_Request_free",
    "MPI_Waitany",
    "MPI_Testany",
    "MPI_Waitall",
    "MPI_Testall",
    "MPI_Waitsome",
    "MPI_Testsome",
    "MPI_Iprobe",
    "MPI_Probe",
    "MPI_Cancel",
    "MPI_Test_cancelled",
    "MPI_Send_init",
    "MPI_Bsend_init",
    "MPI_Ssend_init",
    "MPI_Rsend_init",
    "MPI_Recv_init",
    "MPI_Start",
    "MPI_Startall",
    "MPI_Sendrecv",
    "MPI_Sendrecv_replace",
    "MPI_Type_contiguous",
    "MPI_Type_vector",
    "MPI_Type_hvector",
    "MPI_Type_indexed",
    "MPI_Type_hindexed",
    "MPI_Type_struct",
    "MPI_Address",
    "MPI_Type_extent",
    "MPI_Type_size",
    "MPI_Type_lb",
    "MPI_Type_ub",
    "MPI_Type_commit",
    "MPI_Type_free",
    "MPI_Get_elements",
    "MPI_Pack",
    "MPI_Unpack",
    "MPI_Pack_size",
    "MPI_Barrier",
    "MPI_Bcast",
    "MPI_Gather",
    "MPI_Gatherv",
    "MPI_Scatter",
    "MPI_Scatterv",
    "MPI_Allgather",
    "MPI_Allgatherv",
    "MPI_Alltoall",
    "MPI_Alltoallv",
    "MPI_Reduce",
    "MPI_Op_create",
    "MPI_Op_free",
    "MPI_Allreduce",
    "MPI_Reduce_scatter",
    "MPI_Scan",
    "MPI_Group_size",
    "MPI_Group_rank",
    "MPI_Group_translate_ranks",
    "MPI_Group_compare",
    "MPI_Comm_group",
    "MPI_Group_union",
    "MPI_Group_intersection",
    "MPI_Group_difference",
    "MPI_Group_incl",
    "MPI_Group_excl",
    "MPI_Group_range_incl",
    "MPI_Group_range_excl",
    "MPI_Group_free",
    "MPI_Comm_size",
    "MPI_Comm_rank",
    "MPI_Comm_compare",
    "MPI_Comm_dup",
    "MPI_Comm_create",
    "MPI_Comm_split",
    "MPI_Comm_free",
    "MPI_Comm_test_inter",
    "MPI_Comm_remote_size",
    "MPI_Comm_remote_group",
    "MPI_Intercomm_create",
    "MPI_Intercomm_merge",
    "MPI_Keyval_create",
    "MPI_Keyval_free",
    "MPI_Attr_put",
    "MPI_Attr_get",
    "MPI_Attr_delete",
    "MPI_Topo_test",
    "MPI_Cart_create",
    "MPI_Dims_create",
    "MPI_Graph_create",
    "MPI_Graphdims_get",
    "MPI_Graph_get",
    "MPI_Cartdim_get",
    "MPI_Cart_get",
    "MPI_Cart_rank",
    "MPI_Cart_coords",
    "MPI_Graph_neighbors_count",
    "MPI_Graph_neighbors",
    "MPI_Cart_shift",
    "MPI_Cart_sub",
    "MPI_Cart_map",
    "MPI_Graph_map",
    "MPI_Get_processor_name",
    "MPI_Get_version",
    "MPI_Errhandler_create",
    "MPI_Errhandler_set",
    "MPI_Errhandler_get",
    "MPI_Errhandler_free",
    "MPI_Error_string",
    "MPI_Error_class",
    "MPI_Wtime",
    "MPI_Wtick",
    "MPI_Init",
    "MPI_Finalize",
    "MPI_Initialized",
    "MPI_Abort",
    "MPI_Pcontrol",
    "MPI_Close_port",
    "MPI_Comm_accept",
    "MPI_Comm_connect",
    "MPI_Comm_disconnect",
    "MPI_Comm_get_parent",
    "MPI_Comm_join",
    "MPI_Comm_spawn",
    "MPI_Comm_spawn_multiple",
    "MPI_Lookup_name",
    "MPI_Open_port",
    "MPI_Publish_name",
    "MPI_Unpublish_name",
    "MPI_Accumulate",
    "MPI_Get",
    "MPI_Put",
    "MPI_Win_complete",
    "MPI_Win_create",
    "MPI_Win_fence",
    "MPI_Win_free",
    "MPI_Win_get_group",
    "MPI_Win_lock",
    "MPI_Win_post",
    "MPI_Win_start",
    "MPI_Win_test",
    "MPI_Win_unlock",
    "MPI_Win_wait",
    "MPI_Alltoallw",
    "MPI_Exscan",
    "MPI_Add_error_class",
    "MPI_Add_error_code",
    "MPI_Add_error_string",
    "MPI_Comm_call_errhandler",
    "MPI_Comm_create_keyval",
    "MPI_Comm_delete_attr",
    "MPI_Comm_free_keyval",
    "MPI_Comm_get_attr",
    "MPI_Comm_get_name",
    "MPI_Comm_set_attr",
    "MPI_Comm_set_name",
    "MPI_File_call_errhandler",
    "MPI_Grequest_complete",
    "MPI_Grequest_start",
    "MPI_Init_thread",
    "MPI_Is_thread_main",
    "MPI_Query_thread",
    "MPI_Status_set_cancelled",
    "MPI_Status_set_elements",
    "MPI_Type_create_keyval",
    "MPI_Type_delete_attr",
    "MPI_Type_dup",
    "MPI_Type_free_keyval",
    "MPI_Type_get_attr",
    "MPI_Type_get_contents",
    "MPI_Type_get_envelope",
    "MPI_Type_get_name",
    "MPI_Type_set_attr",
    "MPI_Type_set_name",
    "MPI_Type_match_size",
    "MPI_Win_call_errhandler",
    "MPI_Win_create_keyval",
    "MPI_Win_delete_attr",
    "MPI_Win_free_keyval",
    "MPI_Win_get_attr",
    "MPI_Win_get_name",
    "MPI_Win_set_attr",
    "MPI_Win_set_name",
    "MPI_Alloc_mem",
    "MPI_Comm_create_errhandler",
    "MPI_Comm_get_errhandler",
    "MPI_Comm_set_errhandler",
    "MPI_File_create_errhandler",
    "MPI_File_get_errhandler",
    "MPI_File_set_errhandler",
    "MPI_Finalized",
    "MPI_Free_mem",
    "MPI_Get_address",
    "MPI_Info_create",
    "MPI_Info_delete",
    "MPI_Info_dup",
    "MPI_Info_free",
    "MPI_Info_get",
    "MPI_Info_get_nkeys",
    "MPI_Info_get_nthkey",
    "MPI_Info_get_valuelen",
    "MPI_Info_set",
    "MPI_Pack_external",
    "MPI_Pack_external_size",
    "MPI_Request_get_status",
    "MPI_Type_create_darray",
    "MPI_Type_create_hindexed",
    "MPI_Type_create_hvector",
    "MPI_Type_create_indexed_block",
    "MPI_Type_create_resized",
    "MPI_Type_create_struct",
    "MPI_Type_create_subarray",
    "MPI_Type_get_extent",
    "MPI_Type_get_true_extent",
    "MPI_Unpack_external",
    "MPI_Win_create_errhandler",
    "MPI_Win_get_errhandler",
    "MPI_Win_set_errhandler",
    "MPI_File_open",
    "MPI_File_close",
    "MPI_File_delete",
    "MPI_File_set_size",
    "MPI_File_preallocate",
    "MPI_File_get_size",
    "MPI_File_get_group",
    "MPI_File_get_amode",
    "MPI_File_set_info",
    "MPI_File_get_info",
    "MPI_File_set_view",
    "MPI_File_get_view",
    "MPI_File_read_at",
    "MPI_File_read_at_all",
    "MPI_File_write_at",
    "MPI_File_write_at_all",
    "MPI_File_iread_at",
    "MPI_File_iwrite_at",
    "MPI_File_read",
    "MPI_File_read_all",
    "MPI_File_write",
    "MPI_File_write_all",
    "MPI_File_iread",
    "MPI_File_iwrite",
    "MPI_File_seek",
    "MPI_File_get_position",
    "MPI_File_get_byte_offset",
    "MPI_File_read_shared",
    "MPI_File_write_shared",
    "MPI_File_iread_shared",
    "MPI_File_iwrite_shared",
    "MPI_File_read_ordered",
    "MPI_File_write_ordered",
    "MPI_File_seek_shared",
    "MPI_File_get_position_shared",
    "MPI_File_read_at_all_begin",
    "MPI_File_read_at_all_end",
    "MPI_File_write_at_all_begin",
    "MPI_File_write_at_all_end",
    "MPI_File_read_all_begin",
    "MPI_File_read_all_end",
    "MPI_File_write_all_begin",
    "MPI_File_write_all_end",
    "MPI_File_read_ordered_begin",
    "MPI_File_read_ordered_end",
    "MPI_File_write_ordered_begin",
    "MPI_File_write_ordered_end",
    "MPI_File_get_type_extent",
    "MPI_Register_datarep",
    "MPI_File_set_atomicity",
    "MPI_File_get_atomicity",
    "MPI_File_sync",
    "MPIO_Test",
    "MPIO_Wait",
    "MPIO_Testall",
    "MPIO_Waitall",
    "MPIO_Testany",
    "MPIO_Waitany",
    "MPIO_Waitsome",
    "MPIO_Testsome",
];

/// Labels of the calls this reader knows the layout of.
pub const SEND: u16 = 0;
pub const RECV: u16 = 1;
pub const GET_COUNT: u16 = 2;
pub const BSEND: u16 = 3;
pub const SSEND: u16 = 4;
pub const RSEND: u16 = 5;
pub const BUFFER_ATTACH: u16 = 6;
pub const BUFFER_DETACH: u16 = 7;
pub const ISEND: u16 = 8;
pub const IBSEND: u16 = 9;
pub const ISSEND: u16 = 10;
pub const IRSEND: u16 = 11;
pub const IRECV: u16 = 12;
pub const WAIT: u16 = 13;
pub const TEST: u16 = 14;
pub const REQUEST_FREE: u16 = 15;
pub const WAITANY: u16 = 16;
pub const TESTANY: u16 = 17;
pub const WAITALL: u16 = 18;
pub const TESTALL: u16 = 19;
pub const WAITSOME: u16 = 20;
pub const TESTSOME: u16 = 21;
pub const IPROBE: u16 = 22;
pub const PROBE: u16 = 23;
pub const CANCEL: u16 = 24;
pub const TEST_CANCELLED: u16 = 25;
pub const SENDRECV: u16 = 33;
pub const SENDRECV_REPLACE: u16 = 34;
pub const TYPE_CONTIGUOUS: u16 = 35;
pub const TYPE_VECTOR: u16 = 36;
pub const TYPE_HVECTOR: u16 = 37;
pub const TYPE_INDEXED: u16 = 38;
pub const TYPE_HINDEXED: u16 = 39;
pub const TYPE_STRUCT: u16 = 40;
pub const ADDRESS: u16 = 41;
pub const TYPE_EXTENT: u16 = 42;
pub const TYPE_SIZE: u16 = 43;
pub const TYPE_LB: u16 = 44;
pub const TYPE_UB: u16 = 45;
pub const TYPE_COMMIT: u16 = 46;
pub const TYPE_FREE: u16 = 47;
pub const GET_ELEMENTS: u16 = 48;
pub const PACK: u16 = 49;
pub const UNPACK: u16 = 50;
pub const PACK_SIZE: u16 = 51;
pub const BARRIER: u16 = 52;
pub const BCAST: u16 = 53;
pub const GATHER: u16 = 54;
pub const GATHERV: u16 = 55;
pub const SCATTER: u16 = 56;
pub const SCATTERV: u16 = 57;
pub const ALLGATHER: u16 = 58;
pub const ALLGATHERV: u16 = 59;
pub const ALLTOALL: u16 = 60;
pub const ALLTOALLV: u16 = 61;
pub const REDUCE: u16 = 62;
pub const OP_CREATE: u16 = 63;
pub const OP_FREE: u16 = 64;
pub const ALLREDUCE: u16 = 65;
pub const REDUCE_SCATTER: u16 = 66;
pub const SCAN: u16 = 67;
pub const GROUP_SIZE: u16 = 68;
pub const GROUP_RANK: u16 = 69;
pub const GROUP_TRANSLATE_RANKS: u16 = 70;
pub const GROUP_COMPARE: u16 = 71;
pub const COMM_GROUP: u16 = 72;
pub const GROUP_UNION: u16 = 73;
pub const GROUP_INTERSECTION: u16 = 74;
pub const GROUP_DIFFERENCE: u16 = 75;
pub const GROUP_INCL: u16 = 76;
pub const GROUP_EXCL: u16 = 77;
pub const GROUP_FREE: u16 = 80;
pub const COMM_SIZE: u16 = 81;
pub const COMM_RANK: u16 = 82;
pub const COMM_COMPARE: u16 = 83;
pub const COMM_DUP: u16 = 84;
pub const COMM_CREATE: u16 = 85;
pub const COMM_SPLIT: u16 = 86;
pub const COMM_FREE: u16 = 87;
pub const COMM_TEST_INTER: u16 = 88;
pub const TOPO_TEST: u16 = 98;
pub const CART_CREATE: u16 = 99;
pub const DIMS_CREATE: u16 = 100;
pub const CARTDIM_GET: u16 = 104;
pub const CART_GET: u16 = 105;
pub const CART_RANK: u16 = 106;
pub const CART_COORDS: u16 = 107;
pub const CART_SHIFT: u16 = 110;
pub const CART_SUB: u16 = 111;
pub const GET_PROCESSOR_NAME: u16 = 114;
pub const GET_VERSION: u16 = 115;
pub const ERROR_STRING: u16 = 120;
pub const ERROR_CLASS: u16 = 121;
pub const WTIME: u16 = 122;
pub const WTICK: u16 = 123;
pub const INIT: u16 = 124;
pub const FINALIZE: u16 = 125;
pub const INITIALIZED: u16 = 126;
pub const ABORT: u16 = 127;
pub const ATTR_PUT: u16 = 95;
pub const ATTR_GET: u16 = 96;
pub const ATTR_DELETE: u16 = 97;
pub const KEYVAL_CREATE: u16 = 93;
pub const KEYVAL_FREE: u16 = 94;
pub const ERRHANDLER_SET: u16 = 117;
pub const ERRHANDLER_GET: u16 = 118;
pub const ERRHANDLER_FREE: u16 = 119;
pub const ERRHANDLER_CREATE: u16 = 116;
/// A function entered, under compiler instrumentation: an 8-byte address follows.
pub const FUNCTION_ENTER: u16 = 291;
/// A function left, under compiler instrumentation: an 8-byte address follows.
pub const FUNCTION_EXIT: u16 = 292;
/// The end of the body.
pub const END_OF_STREAM: u16 = 293;
