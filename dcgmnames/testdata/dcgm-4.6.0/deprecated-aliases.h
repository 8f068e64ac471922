#define DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL    DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL
#define DCGM_FI_DRIVER_VERSION                                       DCGM_FI_SYSTEM_DRIVER_VERSION                               //    1
#define DCGM_FI_DEV_MEMORY_TEMP                                      DCGM_FI_DEV_MEMORY_TEMP_CELSIUS                             //  140
#define DCGM_FI_DEV_GPU_TEMP                                         DCGM_FI_DEV_GPU_TEMP_CELSIUS                                //  150
#define DCGM_FI_DEV_POWER_USAGE                                      DCGM_FI_DEV_BOARD_POWER_WATTS                               //  155
#define DCGM_FI_DEV_PCIE_REPLAY_COUNTER                              DCGM_FI_DEV_PCIE_REPLAY_TOTAL                               //  202
#define DCGM_FI_DEV_GPU_UTIL                                         DCGM_FI_DEV_GPU_UTIL_RATIO                                  //  203
#define DCGM_FI_DEV_XID_ERRORS                                       DCGM_FI_DEV_XID_ERROR                                       //  230
#define DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS                      DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL                   //  393
#define DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS                        DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL                     //  394
#define DCGM_FI_DEV_ROW_REMAP_FAILURE                                DCGM_FI_DEV_ROW_REMAP_FAILED                                //  395
#define DCGM_FI_PROF_GR_ENGINE_ACTIVE                                DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO                           // 1001
#define DCGM_FI_PROF_SM_ACTIVE                                       DCGM_FI_PROF_SM_UTIL_RATIO                                  // 1002
#define DCGM_FI_PROF_SM_OCCUPANCY                                    DCGM_FI_PROF_SM_OCCUPANCY_RATIO                             // 1003
#define DCGM_FI_PROF_PIPE_TENSOR_ACTIVE                              DCGM_FI_PROF_TENSOR_UTIL_RATIO                              // 1004
#define DCGM_FI_PROF_DRAM_ACTIVE                                     DCGM_FI_PROF_DRAM_UTIL_RATIO                                // 1005
