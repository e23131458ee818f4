// Options:   --no-checksum --no-bitfields --no-packed-struct --no-volatiles --no-volatile-pointers --concise --quiet --seed 1212088814 --max-funcs 4 --max-block-depth 3 --max-block-size 3 --max-expr-complexity 3 --max-array-dim 1 --max-array-len-per-dim 3 --max-struct-fields 3 --no-unions --no-math64 -o /tmp/soundness-work-nz54m3xr/cs64-czyj3hxf/prog.c
#include "csmith.h"

volatile uint32_t csmith_sink_ = 0;

static long __undefined;



static int32_t g_2 = 0x3B26BDDEL;
static int16_t g_15 = 0x34F5L;
static int32_t g_29 = 0x126C7F05L;
static uint16_t g_33 = 65535UL;
static uint32_t g_55 = 0x63704BAEL;
static const int32_t g_63[2] = {0x17913DA5L,0x17913DA5L};
static const int32_t *g_62[1] = {&g_63[0]};
static const int32_t **g_61[1] = {&g_62[0]};
static int8_t g_78 = 3L;
static int8_t g_81 = 0x62L;
static int32_t *g_107 = (void*)0;
static int16_t *g_114 = &g_15;
static uint32_t g_142 = 0x1E54E034L;
static int16_t **g_159 = &g_114;
static int16_t ***g_158[3] = {&g_159,&g_159,&g_159};
static uint16_t ***g_186 = (void*)0;
static int32_t *g_187[3] = {&g_2,&g_2,&g_2};



static uint32_t  func_1(void);
static int32_t  func_5(int8_t  p_6, int32_t  p_7);
static int32_t * func_17(int16_t * p_18);
static int16_t * func_19(int32_t * p_20, const uint32_t  p_21, int32_t  p_22, int16_t * p_23, int32_t * p_24);




static uint32_t  func_1(void)
{ 
    int32_t l_16 = (-8L);
    int32_t * const l_174 = &l_16;
    int32_t l_196 = (-1L);
    uint32_t l_197 = 0xA0073B97L;
    for (g_2 = 9; (g_2 >= (-10)); --g_2)
    { 
        uint16_t l_13[2];
        int16_t *l_14 = &g_15;
        int32_t l_141 = 3L;
        uint32_t l_152 = 0x1BBB9F26L;
        int8_t l_181 = 0x66L;
        uint16_t **l_185 = (void*)0;
        uint16_t ***l_184 = &l_185;
        int32_t l_195[2];
        int i;
        for (i = 0; i < 2; i++)
            l_13[i] = 65527UL;
        for (i = 0; i < 2; i++)
            l_195[i] = 0x9280DD1AL;
        if (func_5((safe_lshift_func_uint16_t_u_u(((+0x5A60L) | ((*l_14) = ((safe_lshift_func_uint8_t_u_u(l_13[1], g_2)) ^ g_2))), 5)), l_16))
        { 
            int32_t *l_135 = (void*)0;
            int32_t *l_136 = &g_29;
            int32_t *l_137 = &g_29;
            int32_t *l_138 = &l_16;
            int32_t *l_139 = &g_29;
            int32_t *l_140[2];
            int16_t *l_145[3];
            int32_t **l_146 = &g_107;
            int i;
            for (i = 0; i < 2; i++)
                l_140[i] = (void*)0;
            for (i = 0; i < 3; i++)
                l_145[i] = &g_15;
            --g_142;
            (*l_146) = func_17(l_145[0]);
        }
        else
        { 
            uint16_t l_147 = 0x5982L;
            int32_t *l_153 = &l_141;
            uint32_t l_172 = 4294967295UL;
            int16_t *l_173 = (void*)0;
            (*l_153) = ((l_147 > (safe_mod_func_uint8_t_u_u(((safe_add_func_int32_t_s_s((0xBFD2L ^ l_152), l_13[1])) , 0xB4L), g_142))) , 0x6C0765CAL);
            if (l_16)
            { 
                int16_t **l_154 = &g_114;
                int16_t ***l_155 = &l_154;
                int8_t l_163 = (-10L);
                (*l_155) = l_154;
                (*l_153) = (safe_mul_func_uint8_t_u_u((g_158[2] == ((+(g_78 ^= (((safe_lshift_func_int8_t_s_s(g_81, l_163)) && l_16) < l_16))) , (void*)0)), g_55));
                (*l_153) = (safe_rshift_func_int16_t_s_u(((**g_159) = (safe_lshift_func_int8_t_s_s((safe_add_func_int32_t_s_s(l_163, (safe_sub_func_uint8_t_u_u(g_78, l_16)))), 0))), 2));
            }
            else
            { 
                int32_t **l_175 = &l_153;
                int32_t l_176 = (-1L);
                l_16 |= l_172;
                (*l_175) = l_174;
                l_176 |= ((*l_174) | (((1UL || (*l_153)) >= 0x4A0BL) >= g_81));
            }
            (*l_153) = 0xA0F19388L;
        }
        for (g_29 = (-2); (g_29 > 22); g_29 = safe_add_func_uint8_t_u_u(g_29, 7))
        { 
            int32_t *l_188 = &l_16;
            int32_t *l_189 = (void*)0;
            int32_t *l_190 = &l_16;
            int32_t *l_191 = &l_141;
            int32_t *l_192 = &l_16;
            int32_t *l_193 = (void*)0;
            int32_t *l_194[3];
            int i;
            for (i = 0; i < 3; i++)
                l_194[i] = (void*)0;
            for (g_81 = 2; (g_81 >= 0); g_81 -= 1)
            { 
                int32_t l_182 = 0L;
                int32_t *l_183 = &l_141;
                (*l_183) ^= ((*l_174) = (safe_lshift_func_uint16_t_u_s((((*g_114) = l_181) >= l_182), 13)));
                g_186 = l_184;
                (*l_174) ^= (((g_15 && ((void*)0 != g_187[2])) , 9L) <= 2L);
            }
            --l_197;
            (*l_191) &= (((*l_174) > l_195[0]) > (-6L));
        }
    }
    return g_29;
}



static int32_t  func_5(int8_t  p_6, int32_t  p_7)
{ 
    int16_t l_25 = 0x1720L;
    int32_t *l_26 = &g_2;
    int32_t **l_134 = &l_26;
    (*l_134) = func_17(func_19(&g_2, p_7, l_25, &g_15, l_26));
    (*l_134) = func_17((((void*)0 != &l_134) , &l_25));
    return p_6;
}



static int32_t * func_17(int16_t * p_18)
{ 
    uint8_t l_40[3];
    int32_t *l_47 = &g_29;
    int32_t ** const l_46 = &l_47;
    const int32_t *l_59 = &g_29;
    const int32_t **l_58 = &l_59;
    int32_t l_66 = 0x5F1C2B46L;
    int8_t l_104 = 0xDAL;
    int i;
    for (i = 0; i < 3; i++)
        l_40[i] = 6UL;
    for (g_29 = 0; (g_29 == (-1)); g_29 = safe_sub_func_int32_t_s_s(g_29, 8))
    { 
        return &g_29;
    }
lbl_87:
    for (g_33 = 0; (g_33 <= 2); g_33 += 1)
    { 
        int32_t *l_41 = &g_29;
        (*l_41) = ((8UL & (-10L)) > 0x0D69L);
    }
    if ((safe_mul_func_int16_t_s_s(((((safe_sub_func_uint16_t_u_u((l_46 == &l_47), g_2)) , 0xCDA6L) , &g_15) == &g_15), (*l_47))))
    { 
        uint32_t l_53 = 8UL;
        uint32_t *l_54 = &g_55;
        int32_t ** const l_64[3] = {&l_47,&l_47,&l_47};
        uint32_t l_67[1];
        int16_t l_79 = 0xD624L;
        int8_t l_80 = 1L;
        uint8_t l_91 = 0x06L;
        uint16_t *l_110 = &g_33;
        int i;
        for (i = 0; i < 1; i++)
            l_67[i] = 18446744073709551615UL;
        if (((safe_lshift_func_int8_t_s_u(((safe_lshift_func_uint16_t_u_s((!((*l_54) |= l_53)), ((safe_mul_func_uint8_t_u_u((((*l_47) && (*l_47)) ^ g_33), g_15)) && (**l_46)))) ^ 0x97C3L), (*l_47))) == 8UL))
        { 
            const int32_t ***l_60[3];
            int32_t l_65 = 2L;
            int32_t l_84 = 0x137C5FD5L;
            int i;
            for (i = 0; i < 3; i++)
                l_60[i] = &l_58;
            (*l_46) = (void*)0;
            if ((g_29 |= ((g_61[0] = l_58) != l_64[2])))
            { 
                --l_67[0];
                g_81 ^= (safe_mul_func_uint16_t_u_u((safe_sub_func_int32_t_s_s((((safe_lshift_func_uint8_t_u_s((g_33 || (((--(*l_54)) & ((g_78 = ((((((-8L) | g_33) <= g_2) ^ g_15) & 1UL) != (*p_18))) | l_79)) , (*l_59))), g_63[0])) <= (*l_59)) , 0xB11FE8BEL), l_80)), 0x82F8L));
            }
            else
            { 
                int16_t l_85 = 0x64CEL;
                int32_t l_86 = (-2L);
                g_29 |= ((((safe_mul_func_int16_t_s_s(((l_84 ^ ((*l_54) = g_2)) | 1UL), (*p_18))) >= l_85) & (-1L)) , l_85);
                g_29 |= l_86;
            }
        }
        else
        { 
            int32_t *l_106[3];
            uint16_t *l_112[2];
            int i;
            for (i = 0; i < 3; i++)
                l_106[i] = &g_2;
            for (i = 0; i < 2; i++)
                l_112[i] = (void*)0;
            if (g_33)
                goto lbl_87;
            for (g_78 = 0; (g_78 <= 0); g_78 += 1)
            { 
                uint16_t l_88[3];
                int8_t *l_105 = &g_81;
                int i;
                for (i = 0; i < 3; i++)
                    l_88[i] = 0x3036L;
                l_88[0]++;
                --l_91;
                g_62[g_78] = (g_107 = ((safe_lshift_func_uint8_t_u_s((**l_46), ((*l_105) = (safe_mul_func_int16_t_s_s(((safe_rshift_func_int16_t_s_u((((safe_add_func_int8_t_s_s(((((safe_rshift_func_int8_t_s_s((((*p_18) & l_104) <= g_63[0]), l_88[0])) >= (-3L)) <= l_88[1]) || 0xA4A205A5L), g_63[1])) > 0L) == (**l_46)), g_81)) != 0xC2DE0B6AL), 0xACFCL))))) , l_106[2]));
            }
            for (g_29 = (-15); (g_29 >= 10); g_29 = safe_add_func_int32_t_s_s(g_29, 8))
            { 
                uint16_t **l_111[1];
                int32_t *l_113 = &g_2;
                int i;
                for (i = 0; i < 1; i++)
                    l_111[i] = &l_110;
                (*l_58) = (((l_112[1] = l_110) == (void*)0) , (void*)0);
                return l_113;
            }
        }
        (*l_58) = (*l_46);
    }
    else
    { 
        int32_t l_120[2];
        int i;
        for (i = 0; i < 2; i++)
            l_120[i] = 0xDAFBE715L;
        for (l_104 = 0; (l_104 >= 0); l_104 -= 1)
        { 
            int32_t **l_133 = &g_107;
            int32_t ***l_132[2];
            int32_t ****l_131 = &l_132[0];
            int i;
            for (i = 0; i < 2; i++)
                l_132[i] = &l_133;
            for (g_15 = 0; (g_15 >= 0); g_15 -= 1)
            { 
                int32_t l_119 = 0xCED7563FL;
                int32_t *l_126[1];
                int i;
                for (i = 0; i < 1; i++)
                    l_126[i] = &l_120[0];
                (**l_46) = ((void*)0 != g_114);
            }
            (*l_47) = (safe_sub_func_uint16_t_u_u(l_120[0], (((((*l_131) = ((safe_lshift_func_int8_t_s_s(0x39L, 1)) , (void*)0)) == &g_61[l_104]) != 0x5226L) == 0L)));
        }
    }
    return &g_2;
}



static int16_t * func_19(int32_t * p_20, const uint32_t  p_21, int32_t  p_22, int16_t * p_23, int32_t * p_24)
{ 
    int32_t *l_27 = &g_2;
    int32_t **l_28 = &l_27;
    uint16_t *l_32 = &g_33;
    int32_t *l_36[3];
    uint32_t l_37 = 0xA2EF7E29L;
    int i;
    for (i = 0; i < 3; i++)
        l_36[i] = &g_29;
    g_29 = ((((*l_28) = l_27) != (void*)0) >= g_2);
    p_22 = (safe_add_func_uint16_t_u_u(((*l_32) &= (*l_27)), (safe_sub_func_uint16_t_u_u((*l_27), (*l_27)))));
    g_29 = l_37;
    return l_32;
}





int main (int argc, char* argv[])
{
    int i;
    int print_hash_value = 0;
    if (argc == 2 && strcmp(argv[1], "1") == 0) print_hash_value = 1;
    platform_main_begin();
    func_1();
    csmith_sink_ = g_2;
    csmith_sink_ = g_15;
    csmith_sink_ = g_29;
    csmith_sink_ = g_33;
    csmith_sink_ = g_55;
    for (i = 0; i < 2; i++)
    {
        csmith_sink_ = g_63[i];
    }
    csmith_sink_ = g_78;
    csmith_sink_ = g_81;
    csmith_sink_ = g_142;
    platform_main_end(0,0);
    return 0;
}
